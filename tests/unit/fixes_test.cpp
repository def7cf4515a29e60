// The fixes rules offer, checked as text: input, the fix's edits applied, output.
#include <doctest/doctest.h>

#include <algorithm>

#include "linter/fixes.hpp"
#include "linter/lint.hpp"
#include "rules/registry.hpp"

using namespace ddplint;

namespace {
const std::string kHead = "import torch\nfrom torch.utils.data import DataLoader\nmodel = Net().cuda()\n";

// The fix of the one finding of `code`, with its applicability ("" if none).
std::pair<std::string, std::string> fixed_with(const std::string& src, std::string_view code) {
  SourceFile f("t.py", src);
  LintResult r = lint(f, rules::all(), RuleSelection({std::string(code)}, {}));
  REQUIRE(r.diagnostics.size() == 1);
  if (!r.diagnostics[0].fix) return {"", ""};
  std::vector<Edit> edits = r.diagnostics[0].fix->edits;
  std::sort(edits.begin(), edits.end(), [](const Edit& a, const Edit& b) { return a.start < b.start; });
  return {apply_edits(src, edits), r.diagnostics[0].fix->applicability == Fix::Applicability::Safe ? "safe" : "unsafe"};
}

// The file after applying the fix of the one finding of `code`; "" if it has no fix.
std::string fixed(const std::string& src, std::string_view code) { return fixed_with(src, code).first; }
}  // namespace

TEST_CASE("DDP102 fix: pin_memory=True after the last argument, formatting kept") {
  CHECK(fixed(kHead + "l = DataLoader(ds, batch_size=8)\n", "DDP102") ==
        kHead + "l = DataLoader(ds, batch_size=8, pin_memory=True)\n");
  CHECK(fixed(kHead + "l = DataLoader(ds, batch_size=8,)\n", "DDP102") ==
        kHead + "l = DataLoader(ds, batch_size=8, pin_memory=True,)\n");
  CHECK(fixed(kHead + "l = DataLoader(\n    ds,\n    batch_size=8,  # per GPU\n)\n", "DDP102") ==
        kHead + "l = DataLoader(\n    ds,\n    batch_size=8, pin_memory=True,  # per GPU\n)\n");
  CHECK(fixed(kHead + "l = DataLoader()\n", "DDP102") == kHead + "l = DataLoader(pin_memory=True)\n");
  CHECK(fixed(kHead + "l = DataLoader(ds, pin_memory=False)\n", "DDP102") ==
        kHead + "l = DataLoader(ds, pin_memory=True)\n");
  // a named constant may be used elsewhere: reported, not rewritten
  CHECK(fixed(kHead + "PIN = False\nl = DataLoader(ds, pin_memory=PIN)\n", "DDP102").empty());
}

TEST_CASE("DDP502 fix: torch.amp with \"cuda\" where the rewrite is mechanical") {
  const std::string h = "import torch\n";
  CHECK(fixed(h + "with torch.cuda.amp.autocast():\n    y = m(x)\n", "DDP502") ==
        h + "with torch.amp.autocast(\"cuda\"):\n    y = m(x)\n");
  CHECK(fixed(h + "with torch.cuda.amp.autocast(dtype=torch.bfloat16):\n    y = m(x)\n", "DDP502") ==
        h + "with torch.amp.autocast(\"cuda\", dtype=torch.bfloat16):\n    y = m(x)\n");
  CHECK(fixed(h + "scaler = torch.cuda.amp.GradScaler(2.0**14)\n", "DDP502") ==
        h + "scaler = torch.amp.GradScaler(\"cuda\", 2.0**14)\n");
  CHECK(fixed(h + "class F(torch.autograd.Function):\n    @staticmethod\n    @torch.cuda.amp.custom_fwd\n    def forward(ctx, x):\n        return x\n",
              "DDP502") ==
        h + "class F(torch.autograd.Function):\n    @staticmethod\n    @torch.amp.custom_fwd(device_type=\"cuda\")\n    def forward(ctx, x):\n        return x\n");
  CHECK(fixed(h + "class F(torch.autograd.Function):\n    @staticmethod\n    @torch.cuda.amp.custom_fwd(cast_inputs=torch.float32)\n    def forward(ctx, x):\n        return x\n",
              "DDP502") ==
        h + "class F(torch.autograd.Function):\n    @staticmethod\n    @torch.amp.custom_fwd(device_type=\"cuda\", cast_inputs=torch.float32)\n    def forward(ctx, x):\n        return x\n");
  // positional autocast arguments mean something else in torch.amp.autocast: no fix
  CHECK(fixed(h + "with torch.cuda.amp.autocast(True):\n    y = m(x)\n", "DDP502").empty());
  // an imported name needs its import changed as well: no fix
  CHECK(fixed("from torch.cuda.amp import autocast\nwith autocast():\n    y = m(x)\n", "DDP502").empty());
}

TEST_CASE("applicable_edits: safe only unless asked, overlapping fixes skipped, sorted") {
  static const RuleInfo info{"DDP999", "test", Severity::Warning, "", "", "", true};
  auto diag = [&](std::uint32_t s, std::uint32_t e, Fix::Applicability a) {
    return Diagnostic{&info, s, e, "m", Fix{a, "f", {Edit{s, e, "X"}}}};
  };
  std::vector<Diagnostic> ds{diag(10, 12, Fix::Applicability::Safe), diag(0, 2, Fix::Applicability::Safe),
                             diag(11, 13, Fix::Applicability::Safe), diag(20, 21, Fix::Applicability::Unsafe)};
  auto safe = applicable_edits(ds, false);
  REQUIRE(safe.size() == 2);
  CHECK(safe[0].start == 0);
  CHECK(safe[1].start == 10);
  CHECK(applicable_edits(ds, true).size() == 3);
  CHECK(apply_edits("abcdefghijklmnopqrstuvwxyz", safe) == "XcdefghijXmnopqrstuvwxyz");
}

namespace {
const std::string kDdpHead =
    "import os\nimport torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
    "dist.init_process_group(\"nccl\")\n";
}  // namespace

TEST_CASE("DDP201 fix: device_ids=[the file's local-rank name]; safe when known, unsafe from LOCAL_RANK") {
  auto [a, sa] = fixed_with(kDdpHead + "local_rank = int(os.environ[\"LOCAL_RANK\"])\nmodel = Net()\nmodel = DDP(model)\n",
                            "DDP201");
  CHECK(a == kDdpHead + "local_rank = int(os.environ[\"LOCAL_RANK\"])\nmodel = Net()\nmodel = DDP(model, device_ids=[local_rank])\n");
  CHECK(sa == "safe");
  auto [b, sb] = fixed_with(kDdpHead + "lr_id = int(os.environ.get(\"LOCAL_RANK\", 0))\nmodel = DDP(Net().to(dev))\n", "DDP201");
  CHECK(b == kDdpHead + "lr_id = int(os.environ.get(\"LOCAL_RANK\", 0))\nmodel = DDP(Net().to(dev), device_ids=[lr_id])\n");
  CHECK(sb == "safe");
  auto [c, sc] = fixed_with(kDdpHead + "def main(dev):\n    model = DDP(Net().to(dev))\n", "DDP201");
  CHECK(c == kDdpHead + "def main(dev):\n    model = DDP(Net().to(dev), device_ids=[int(os.environ[\"LOCAL_RANK\"])])\n");
  CHECK(sc == "unsafe");
  const std::string argp = "import argparse\nimport torch\nimport torch.distributed as dist\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"
                           "p = argparse.ArgumentParser()\np.add_argument(\"--local_rank\", type=int, default=0)\nargs = p.parse_args()\n"
                           "dist.init_process_group(\"nccl\")\nmodel = DDP(Net().to(dev))\n";
  auto [d, sd] = fixed_with(argp, "DDP201");
  CHECK(d.find("model = DDP(Net().to(dev), device_ids=[args.local_rank])") != std::string::npos);
  CHECK(sd == "safe");
}

TEST_CASE("DDP101, DDP106, DDP206, DDP209 fixes") {
  const std::string h = "import torch\nfrom torch.utils.data import DataLoader\n";
  auto [w, sw] = fixed_with(h + "l = DataLoader(ds, batch_size=8)\n", "DDP101");
  CHECK(w == h + "l = DataLoader(ds, batch_size=8, num_workers=4)\n");
  CHECK(sw == "unsafe");
  // a written 0 is flagged (and fixed) where the dataset's per-sample work is seen
  const std::string decoding = "from PIL import Image\nclass P:\n    def __getitem__(self, i):\n        return Image.open(i)\n";
  CHECK(fixed_with(h + decoding + "l = DataLoader(P(), num_workers=0)\n", "DDP101").first ==
        h + decoding + "l = DataLoader(P(), num_workers=4)\n");
  auto [s1, ss] = fixed_with(h + "l = DataLoader(ds, shuffle=True, sampler=smp, batch_size=8)\n", "DDP106");
  CHECK(s1 == h + "l = DataLoader(ds, sampler=smp, batch_size=8)\n");
  CHECK(ss == "safe");
  CHECK(fixed_with(h + "l = DataLoader(ds, sampler=smp, shuffle=True)\n", "DDP106").first ==
        h + "l = DataLoader(ds, sampler=smp)\n");
  CHECK(fixed_with(h + "l = DataLoader(ds, 8, True, smp)\n", "DDP106").first == h + "l = DataLoader(ds, 8, False, smp)\n");
  // a comment in the text that would go: no fix
  CHECK(fixed_with(h + "l = DataLoader(ds, sampler=smp,  # per rank\n    shuffle=True)\n", "DDP106").first.empty());
  auto [u, su] = fixed_with(kDdpHead + "model = DDP(net, device_ids=[0], find_unused_parameters=True)\n", "DDP209");
  CHECK(u == kDdpHead + "model = DDP(net, device_ids=[0])\n");
  CHECK(su == "unsafe");
  const std::string legacy = "import argparse\nimport os\np = argparse.ArgumentParser()\n"
                             "p.add_argument(\"--local_rank\", type=int, default=0)\nargs = p.parse_args()\n"
                             "torch.cuda.set_device(args.local_rank)\n";
  auto [l, sl] = fixed_with(legacy, "DDP206");
  CHECK(l.find("p.add_argument(\"--local_rank\", type=int, default=int(os.environ.get(\"LOCAL_RANK\", 0)))") !=
        std::string::npos);
  CHECK(sl == "unsafe");
}
