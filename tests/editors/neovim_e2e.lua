-- Neovim end to end: Debian's nvim (0.7: vim.lsp.start_client and
-- vim.lsp.buf_attach_client) runs `ddplint server` on a fixture, headless.
-- Checks that
--   1. the diagnostics that arrive are the command line's findings, with the
--      same ranges (the server speaks UTF-16 to this client; the fixture has
--      wide and astral-plane characters before a finding);
--   2. an edit that fixes a line clears that line's diagnostic;
--   3. the "Disable for this line" code action's edit, applied by Neovim,
--      adds `# noqa: CODE` and the diagnostic goes away.
-- Environment: DDPLINT_BIN, DDPLINT_FIXTURE (a .py file), DDPLINT_EXPECTED
-- (the command line's `--format json` output for that file).
local bin = os.getenv("DDPLINT_BIN")
local fixture = os.getenv("DDPLINT_FIXTURE")
local expected_path = os.getenv("DDPLINT_EXPECTED")

local function fail(msg)
  io.stderr:write("neovim e2e: FAIL: " .. msg .. "\n")
  os.exit(1)
end
local function note(msg) io.stderr:write("neovim e2e: " .. msg .. "\n") end

local f = io.open(expected_path, "r") or fail("cannot read " .. tostring(expected_path))
local expected = vim.fn.json_decode(f:read("*a"))
f:close()
if #expected == 0 then fail("the command line found nothing in the fixture") end

vim.cmd("edit " .. vim.fn.fnameescape(fixture))
local bufnr = vim.api.nvim_get_current_buf()
vim.bo[bufnr].filetype = "python"

local client_id = vim.lsp.start_client({
  name = "ddplint",
  cmd = { bin, "server" },
  -- the opt-in DDP102 (pin_memory, with a quick fix), as the command line's --extend-select
  init_options = { extendSelect = { "DDP102" } },
  root_dir = vim.fn.fnamemodify(fixture, ":h"),
})
if not client_id then fail("start_client failed") end
if not vim.lsp.buf_attach_client(bufnr, client_id) then fail("buf_attach_client failed") end

local function code_of(d)
  return d.code or (d.user_data and d.user_data.lsp and d.user_data.lsp.code)
end
local function ddplint_diagnostics()
  local out = {}
  for _, d in ipairs(vim.diagnostic.get(bufnr)) do
    if d.source == "ddplint" then table.insert(out, d) end
  end
  return out
end
local function key(lnum, col, end_lnum, end_col, code)
  return string.format("%d:%d-%d:%d %s", lnum, col, end_lnum, end_col, code)
end
local function wait_until(what, pred)
  if not vim.wait(15000, pred, 20) then fail("timed out waiting for " .. what) end
end

-- 1. the command line's findings, same ranges. The CLI reports 1-based rows and
-- code-point columns; Neovim stores 0-based rows and byte columns.
local lines = vim.api.nvim_buf_get_lines(bufnr, 0, -1, false)
local want = {}
for _, e in ipairs(expected) do
  local s = e.location
  local t = e.end_location
  local scol = vim.str_byteindex(lines[s.row], s.column - 1)
  local ecol = vim.str_byteindex(lines[t.row], t.column - 1)
  want[key(s.row - 1, scol, t.row - 1, ecol, e.code)] = true
end
wait_until("diagnostics", function() return #ddplint_diagnostics() == #expected end)
for _, d in ipairs(ddplint_diagnostics()) do
  local k = key(d.lnum, d.col, d.end_lnum, d.end_col, code_of(d))
  if not want[k] then fail("unexpected diagnostic " .. k .. " (" .. d.message .. ")") end
  want[k] = nil
end
for k, _ in pairs(want) do fail("missing diagnostic " .. k) end
note(#expected .. " diagnostics match the command line, ranges included")

-- 2. fix the unlabeled loader's line by typing `pin_memory=True, ` into the buffer
local function lines_with(code)
  local out = {}
  for _, d in ipairs(ddplint_diagnostics()) do
    if code_of(d) == code then out[d.lnum] = true end
  end
  return out
end
local target
for i, l in ipairs(lines) do
  if l:find("^unlabeled_loader = DataLoader%(") then target = i - 1 end
end
if not target or not lines_with("DDP102")[target] then fail("no DDP102 on the unlabeled loader line") end
local col = lines[target + 1]:find("batch_size") - 1
vim.api.nvim_buf_set_text(bufnr, target, col, target, col, { "pin_memory=True, " })
wait_until("the fixed line's diagnostic to clear", function() return not lines_with("DDP102")[target] end)
note("typing pin_memory=True cleared line " .. (target + 1))

-- 3. "Disable for this line" on the other DDP102 line, applied by Neovim
local other
for l, _ in pairs(lines_with("DDP102")) do other = l end
if not other then fail("no DDP102 left to disable") end
local params = {
  textDocument = { uri = vim.uri_from_bufnr(bufnr) },
  range = { start = { line = other, character = 0 }, ["end"] = { line = other, character = 0 } },
  context = { diagnostics = {} },
}
local responses = vim.lsp.buf_request_sync(bufnr, "textDocument/codeAction", params, 10000)
local action
for _, r in pairs(responses or {}) do
  for _, a in ipairs(r.result or {}) do
    if a.title == "ddplint (DDP102): Disable for this line" then action = a end
  end
end
if not action then fail("no 'Disable for this line' action for DDP102") end
vim.lsp.util.apply_workspace_edit(action.edit, "utf-16")
local after = vim.api.nvim_buf_get_lines(bufnr, other, other + 1, false)[1]
if not after:find("# noqa: DDP102$") then fail("the action's edit gave: " .. after) end
wait_until("the disabled line's diagnostic to clear", function() return not lines_with("DDP102")[other] end)
note("'Disable for this line' added the noqa and cleared line " .. (other + 1))

-- hover on the GradScaler finding shows the rule's documentation
local scaler
for _, d in ipairs(ddplint_diagnostics()) do
  if code_of(d) == "DDP502" then scaler = d end
end
if not scaler then fail("no DDP502") end
local hover = vim.lsp.buf_request_sync(bufnr, "textDocument/hover", {
  textDocument = { uri = vim.uri_from_bufnr(bufnr) },
  position = { line = scaler.lnum, character = scaler.col + 1 },
}, 10000)
local shown = false
for _, r in pairs(hover or {}) do
  if r.result and r.result.contents and tostring(r.result.contents.value):find("deprecated%-cuda%-amp") then shown = true end
end
if not shown then fail("hover did not show DDP502's documentation") end
note("hover shows the rule's documentation")

vim.lsp.stop_client(client_id)
vim.wait(3000, function() return vim.lsp.get_client_by_id(client_id) == nil end, 20)
note("PASS")
os.exit(0)
