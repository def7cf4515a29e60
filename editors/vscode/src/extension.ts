// ddplint for VS Code: starts `ddplint server` (LSP over stdio) for Python
// files and passes the ddplint.* settings to it.
import * as vscode from "vscode";
import {
  LanguageClient,
  LanguageClientOptions,
  ServerOptions,
  TransportKind,
} from "vscode-languageclient/node";

let client: LanguageClient | undefined;

// The settings the server reads (initializationOptions and
// workspace/didChangeConfiguration carry the same object).
function serverSettings(): { select: string[]; extendSelect: string[]; ignore: string[]; configPath: string } {
  const config = vscode.workspace.getConfiguration("ddplint");
  return {
    select: config.get<string[]>("select", []),
    extendSelect: config.get<string[]>("extendSelect", []),
    ignore: config.get<string[]>("ignore", []),
    configPath: config.get<string>("configPath", ""),
  };
}

function createClient(): LanguageClient {
  const command = vscode.workspace.getConfiguration("ddplint").get<string>("path", "ddplint") || "ddplint";
  const serverOptions: ServerOptions = {
    command,
    args: ["server"],
    transport: TransportKind.stdio,
  };
  const clientOptions: LanguageClientOptions = {
    documentSelector: [
      { scheme: "file", language: "python" },
      { scheme: "untitled", language: "python" },
      // launch scripts: shell and SLURM batch files (VS Code's language id for both)
      { scheme: "file", language: "shellscript" },
      { scheme: "untitled", language: "shellscript" },
    ],
    initializationOptions: serverSettings(),
    outputChannelName: "ddplint",
  };
  return new LanguageClient("ddplint", "ddplint", serverOptions, clientOptions);
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  client = createClient();
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (!client || !event.affectsConfiguration("ddplint")) return;
      if (event.affectsConfiguration("ddplint.path")) {
        await client.stop();
        client = createClient();
        await client.start();
        return;
      }
      await client.sendNotification("workspace/didChangeConfiguration", {
        settings: { ddplint: serverSettings() },
      });
    }),
    vscode.commands.registerCommand("ddplint.restart", async () => {
      if (client) await client.stop();
      client = createClient();
      await client.start();
    }),
  );
  await client.start();
}

export async function deactivate(): Promise<void> {
  if (client) await client.stop();
  client = undefined;
}
