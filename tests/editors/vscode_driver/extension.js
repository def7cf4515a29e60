// Test-only extension (tests/editors/vscode_e2e.mjs installs it beside the
// ddplint .vsix in code-server). Through VS Code's own API it opens the
// workspace's train.py, waits for ddplint's diagnostics, asks for the hover of
// the first one, applies "Disable for this line" and a quick fix, opens the
// Problems view (for the test's screenshot), and writes
// what it saw as JSON to $DDPLINT_E2E_OUT (the extension host inherits
// code-server's environment). It asserts nothing: the test compares.
const fs = require("fs");
const path = require("path");
const vscode = require("vscode");

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

function plain(d) {
  return {
    code: typeof d.code === "object" ? String(d.code.value) : String(d.code),
    source: d.source,
    message: d.message,
    start: [d.range.start.line, d.range.start.character],
    end: [d.range.end.line, d.range.end.character],
  };
}

async function ddplintDiagnostics(uri, timeoutMs) {
  const until = Date.now() + timeoutMs;
  for (;;) {
    const found = vscode.languages.getDiagnostics(uri).filter((d) => d.source === "ddplint");
    if (found.length > 0 || Date.now() > until) return found;
    await sleep(250);
  }
}

async function run() {
  const out = process.env.DDPLINT_E2E_OUT;
  if (!out) return;
  const report = { steps: [] };
  const write = () => fs.writeFileSync(out, JSON.stringify(report, null, 1));
  try {
    const folder = vscode.workspace.workspaceFolders[0].uri.fsPath;
    const uri = vscode.Uri.file(path.join(folder, "train.py"));
    const doc = await vscode.workspace.openTextDocument(uri);
    await vscode.window.showTextDocument(doc);
    const ddplint = vscode.extensions.getExtension("ddplint.ddplint");
    if (ddplint && !ddplint.isActive) {
      // its activation event (a Python editor) has fired; give it the time to start
      const until = Date.now() + 30000;
      while (!ddplint.isActive && Date.now() < until) await sleep(250);
      if (!ddplint.isActive) {
        try {
          await ddplint.activate();
        } catch (e) {
          report.activationError = String(e && e.stack ? e.stack : e);
        }
      }
    }
    report.extension = ddplint ? { active: ddplint.isActive, path: ddplint.extensionPath } : null;
    const diagnostics = await ddplintDiagnostics(uri, 90000);
    report.diagnostics = diagnostics.map(plain);
    report.steps.push("diagnostics");
    if (diagnostics.length === 0) return;

    // hover over the first finding: the rule's documentation
    const first = diagnostics[0];
    const hovers = await vscode.commands.executeCommand("vscode.executeHoverProvider", uri, first.range.start);
    report.hover = (hovers || [])
      .flatMap((h) => h.contents.map((c) => (typeof c === "string" ? c : c.value)))
      .join("\n");
    report.steps.push("hover");

    // "Disable for this line" on a finding off the DDP502 lines (the quick fix
    // below needs one of those) adds its noqa
    const fixLines = diagnostics.filter((d) => plain(d).code === "DDP502").map((d) => d.range.start.line);
    const target = diagnostics.find((d) => !fixLines.includes(d.range.start.line)) || first;
    const actions = await vscode.commands.executeCommand("vscode.executeCodeActionProvider", uri, target.range);
    report.actions = (actions || []).map((a) => a.title);
    const code = plain(target).code;
    report.disabledCode = code;
    const disable = (actions || []).find((a) => a.title.includes(`(${code})`) && a.title.includes("Disable for this line"));
    if (disable && disable.edit) {
      await vscode.workspace.applyEdit(disable.edit);
      report.disabledLine = doc.lineAt(target.range.start.line).text;
      report.steps.push("disable");
    }

    // a quick fix (DDP502's safe fix) applies and its finding goes away
    const all = await ddplintDiagnostics(uri, 10000);
    const fixable = all.find((d) => plain(d).code === "DDP502");
    if (fixable) {
      const fixes = await vscode.commands.executeCommand("vscode.executeCodeActionProvider", uri, fixable.range);
      const fix = (fixes || []).find((a) => a.title.includes("DDP502") && !a.title.includes("Disable") && a.edit);
      report.fixTitle = fix ? fix.title : null;
      if (fix) {
        await vscode.workspace.applyEdit(fix.edit);
        report.fixedLine = doc.lineAt(fixable.range.start.line).text;
        const until = Date.now() + 30000;
        while (Date.now() < until) {
          const now = vscode.languages.getDiagnostics(uri).filter((d) => d.source === "ddplint").map(plain);
          if (!now.some((d) => d.code === "DDP502")) {
            report.afterFix = now;
            break;
          }
          await sleep(250);
        }
        report.steps.push("fix");
      }
    }
    // the Problems view open for the screenshot (vscode_e2e.mjs takes it once the report is done)
    await vscode.commands.executeCommand("workbench.actions.view.problems");
    await sleep(1500);
    report.steps.push("problems");
  } catch (e) {
    report.error = String(e && e.stack ? e.stack : e);
  } finally {
    report.done = true;
    write();
  }
}

function activate() {
  run();
}

module.exports = { activate, deactivate() {} };
