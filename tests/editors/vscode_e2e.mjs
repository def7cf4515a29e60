// The VS Code extension in a real VS Code: code-server (VS Code's own
// workbench and extension host, pinned in tests/editors/package.json) with the
// ddplint .vsix installed, a workspace holding a training script, and headless
// Chromium (Debian's) opening the workbench so that the extension host runs.
// A test-only extension (tests/editors/vscode_driver) uses VS Code's API to
// read ddplint's diagnostics, the hover, "Disable for this line" and a quick
// fix, and writes what it saw; this script compares that with the CLI's JSON
// (ranges included) and saves a screenshot of the workbench.
// Usage: node vscode_e2e.mjs CODE_SERVER VSIX DRIVER_DIR VSCE DDPLINT OUT_DIR
// (run by Node 24, which code-server needs; exit 0 when every check holds).
import { spawn, spawnSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";

const [codeServer, vsix, driverDir, vsce, ddplint, outDir] = process.argv.slice(2);
if (!outDir) {
  console.error("usage: node vscode_e2e.mjs CODE_SERVER VSIX DRIVER_DIR VSCE DDPLINT OUT_DIR");
  process.exit(2);
}
const work = fs.mkdtempSync(path.join(os.tmpdir(), "ddplint-vscode-"));
const children = [];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
let failures = 0;
function check(ok, what) {
  console.log(`${ok ? "ok  " : "FAIL"} ${what}`);
  if (!ok) failures += 1;
}
function run(cmd, args, opts = {}, ok = [0]) {
  const r = spawnSync(cmd, args, { encoding: "utf8", ...opts });
  if (!ok.includes(r.status)) throw new Error(`${cmd} ${args.join(" ")} failed (${r.status}): ${r.stderr || r.stdout}`);
  return r.stdout;
}
function cleanup() {
  for (const c of children) {
    try {
      process.kill(-c.pid, "SIGKILL");
    } catch {}
  }
  fs.rmSync(work, { recursive: true, force: true });
}

try {
  fs.mkdirSync(outDir, { recursive: true });
  // the workspace: a DDP script with findings, one of which has a safe fix
  const ws = path.join(work, "workspace");
  fs.mkdirSync(ws);
  fs.writeFileSync(path.join(ws, "pyproject.toml"), '[project]\nname = "e2e"\n');
  fs.writeFileSync(
    path.join(ws, "train.py"),
    [
      "import os",
      "",
      "import torch",
      "import torch.distributed as dist",
      "from torch.nn.parallel import DistributedDataParallel as DDP",
      "from torch.utils.data import DataLoader, DistributedSampler",
      "",
      'dist.init_process_group("nccl")',
      'local_rank = int(os.environ["LOCAL_RANK"])',
      "torch.cuda.set_device(local_rank)",
      "model = DDP(torch.nn.Linear(8, 8).cuda(), device_ids=[local_rank], find_unused_parameters=True)",
      "dataset = torch.randn(1024, 8)",
      "sampler = DistributedSampler(dataset)",
      "loader = DataLoader(dataset, batch_size=64, sampler=sampler, num_workers=4, pin_memory=True, persistent_workers=True)",
      "scaler = torch.cuda.amp.GradScaler()",
      "optimizer = torch.optim.SGD(model.parameters(), lr=0.1)",
      "for epoch in range(10):",
      "    sampler.set_epoch(epoch)",
      "    for x in loader:",
      "        x = x.cuda(non_blocking=True)",
      '        with torch.autocast("cuda", dtype=torch.bfloat16):',
      "            loss = model(x).sum()",
      "        optimizer.zero_grad()",
      "        scaler.scale(loss).backward()",
      "        scaler.step(optimizer)",
      "        scaler.update()",
      "        print(loss.item())",
      "",
    ].join("\n"),
  );
  // what the CLI reports, as VS Code ranges (0-based lines and characters)
  const cli = JSON.parse(run(ddplint, ["--no-cache", "--format", "json", "train.py"], { cwd: ws }, [0, 1]).trim() || "[]").map(
    (d) => `${d.code} ${d.location.row - 1}:${d.location.column - 1}-${d.end_location.row - 1}:${d.end_location.column - 1}`,
  );

  // the driver packaged as a .vsix of its own, and both installed
  const driver = path.join(work, "driver");
  fs.cpSync(driverDir, driver, { recursive: true });
  run(process.execPath, [vsce, "package", "--skip-license", "--out", path.join(work, "driver.vsix")], { cwd: driver });
  const userData = path.join(work, "user-data");
  const extensions = path.join(work, "extensions");
  fs.mkdirSync(path.join(userData, "User"), { recursive: true });
  fs.writeFileSync(
    path.join(userData, "User", "settings.json"),
    JSON.stringify({
      "ddplint.importStrategy": "useBundled",
      "security.workspace.trust.enabled": false,
      "workbench.startupEditor": "none",
      "telemetry.telemetryLevel": "off",
    }),
  );
  const common = ["--user-data-dir", userData, "--extensions-dir", extensions];
  for (const ext of [vsix, path.join(work, "driver.vsix")])
    run(process.execPath, [codeServer, ...common, "--install-extension", ext]);

  // code-server, then Chromium on its workbench
  const port = 20000 + Math.floor(Math.random() * 20000);
  const report = path.join(work, "report.json");
  const server = spawn(
    process.execPath,
    [codeServer, ...common, "--auth", "none", "--bind-addr", `127.0.0.1:${port}`, "--disable-telemetry",
     "--disable-update-check", "--disable-workspace-trust", ws],
    { env: { ...process.env, DDPLINT_E2E_OUT: report }, detached: true, stdio: ["ignore", "pipe", "pipe"] },
  );
  children.push(server);
  let serverLog = "";
  server.stdout.on("data", (b) => (serverLog += b));
  server.stderr.on("data", (b) => (serverLog += b));
  for (let i = 0; ; i++) {
    try {
      if ((await fetch(`http://127.0.0.1:${port}/healthz`)).ok) break;
    } catch {}
    if (i > 240) throw new Error(`code-server did not start:\n${serverLog}`);
    await sleep(250);
  }
  const debugPort = port + 1;
  const chromium = spawn(
    "chromium",
    ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", `--remote-debugging-port=${debugPort}`,
     "--window-size=1400,900", `--user-data-dir=${path.join(work, "chromium")}`,
     `http://127.0.0.1:${port}/?folder=${encodeURIComponent(ws)}`],
    { detached: true, stdio: "ignore" },
  );
  children.push(chromium);

  // the driver's report
  let seen = null;
  for (let i = 0; i < 600 && !seen; i++) {
    await sleep(250);
    if (fs.existsSync(report)) {
      const r = JSON.parse(fs.readFileSync(report, "utf8"));
      if (r.done) seen = r;
    }
  }
  if (!seen) throw new Error(`the driver extension wrote no report in 150 s\n${serverLog.slice(-4000)}`);
  fs.writeFileSync(path.join(outDir, "vscode_report.json"), JSON.stringify(seen, null, 1));
  if (seen.error) console.log(`driver error: ${seen.error}`);

  // a screenshot of the workbench (Chrome DevTools Protocol over Node's WebSocket)
  try {
    const pages = await (await fetch(`http://127.0.0.1:${debugPort}/json/list`)).json();
    const page = pages.find((p) => p.type === "page");
    const socket = new WebSocket(page.webSocketDebuggerUrl);
    await new Promise((resolve, reject) => {
      socket.onopen = resolve;
      socket.onerror = reject;
    });
    const shot = await new Promise((resolve) => {
      socket.onmessage = (m) => {
        const msg = JSON.parse(m.data);
        if (msg.id === 1) resolve(msg.result && msg.result.data);
      };
      socket.send(JSON.stringify({ id: 1, method: "Page.captureScreenshot", params: { format: "png" } }));
    });
    socket.close();
    if (shot) fs.writeFileSync(path.join(outDir, "vscode.png"), Buffer.from(shot, "base64"));
    console.log(`screenshot: ${path.join(outDir, "vscode.png")}`);
  } catch (e) {
    console.log(`no screenshot: ${e}`);
  }

  // the checks
  const shown = (seen.diagnostics || []).map((d) => `${d.code} ${d.start[0]}:${d.start[1]}-${d.end[0]}:${d.end[1]}`);
  check(seen.extension && seen.extension.active, "the ddplint extension is active (bundled ddplint)");
  check(
    JSON.stringify([...shown].sort()) === JSON.stringify([...cli].sort()),
    `the diagnostics VS Code shows equal the CLI's, ranges included (${shown.length}: ${shown.join(", ")})`,
  );
  check(/What it does|## /.test(seen.hover || ""), "hover shows the rule's documentation");
  const disabledCode = seen.disabledCode || "(none)";
  check((seen.disabledLine || "").includes(`# noqa: ${disabledCode}`), `"Disable for this line" adds # noqa: ${disabledCode}`);
  check(
    (seen.fixedLine || "").includes("torch.amp.GradScaler") && Array.isArray(seen.afterFix),
    `the quick fix "${seen.fixTitle}" applies and its finding goes away`,
  );
} catch (e) {
  console.log(`FAIL ${e.message}`);
  failures += 1;
} finally {
  // the workbench's and extension host's logs, for a failure's reasons
  try {
    fs.cpSync(path.join(work, "user-data", "logs"), path.join(outDir, "vscode-logs"), { recursive: true });
  } catch {}
  cleanup();
}
process.exit(failures === 0 ? 0 : 1);
