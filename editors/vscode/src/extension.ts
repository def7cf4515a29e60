// ddplint for VS Code: starts `ddplint server` (LSP over stdio) for Python
// files and passes the ddplint.* settings to it.
import * as fs from "fs";
import * as path from "path";
import * as vscode from "vscode";
import { LanguageClient, LanguageClientOptions, ServerOptions } from "vscode-languageclient/node";

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

// The ddplint to run, as Ruff's extension picks its binary: an explicit
// `ddplint.path` wins; otherwise `ddplint.importStrategy` picks a ddplint on
// PATH (`fromEnvironment`, the default, falling back to the bundled one when
// none is found) or the one bundled in the .vsix (`useBundled`: the
// linux-x64 build in bundled/bin, with its libraries in bundled/lib/ddplint).
function serverCommand(extensionPath: string): string {
  const config = vscode.workspace.getConfiguration("ddplint");
  const explicit = config.get<string>("path", "");
  if (explicit) return explicit;
  const bundled = path.join(extensionPath, "bundled", "bin", "ddplint");
  if (config.get<string>("importStrategy", "fromEnvironment") === "useBundled") return bundled;
  return onPath("ddplint") ?? (fs.existsSync(bundled) ? bundled : "ddplint");
}

// The first executable file `name` in the folders of PATH, or undefined.
function onPath(name: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(path.delimiter)) {
    if (!dir) continue;
    const candidate = path.join(dir, name);
    try {
      fs.accessSync(candidate, fs.constants.X_OK);
      if (fs.statSync(candidate).isFile()) return candidate;
    } catch {
      // not there, or not executable
    }
  }
  return undefined;
}

let extensionPath = "";

function createClient(): LanguageClient {
  const command = serverCommand(extensionPath);
  // stdio without `transport`: vscode-languageclient would append `--stdio`
  // (which `ddplint server` accepts, but need not be given)
  const serverOptions: ServerOptions = { command, args: ["server"] };
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
  extensionPath = context.extensionPath;
  client = createClient();
  context.subscriptions.push(
    vscode.workspace.onDidChangeConfiguration(async (event) => {
      if (!client || !event.affectsConfiguration("ddplint")) return;
      if (event.affectsConfiguration("ddplint.path") || event.affectsConfiguration("ddplint.importStrategy")) {
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
