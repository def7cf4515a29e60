// Unit tests of the shared rule predicates: statement order around a DDP wrap,
// tensor-valued expressions, accumulation conditions, device pins.
#include <doctest/doctest.h>

#include "linter/semantic_model.hpp"
#include "tests/unit/parsed_model.hpp"
#include "rules/common.hpp"

using namespace ddplint;
using namespace ddplint::rules;

using Model = ddplint::testing::ParsedModel;

TEST_CASE("order: a call after the wrap in the wrap's own block, not in the other arm of an if") {
  Model m(R"(from torch.nn.parallel import DistributedDataParallel as DDP
def setup(net, gpu):
    net.cuda(0)
    if gpu is not None:
        model = DDP(net, device_ids=[gpu])
        model.cuda(1)
    else:
        net.cuda(2)
    net.cuda(3)
)");
  auto wraps = ddp_wraps(m.model);
  REQUIRE(wraps.size() == 1);
  CHECK(wraps[0].result == "model");
  CHECK(wraps[0].module == "net");
  CHECK_FALSE(after_wrap_of(m.model, wraps, m.call("net.cuda(0)"), "net"));  // before
  CHECK(after_wrap_of(m.model, wraps, m.call("model.cuda(1)"), "model"));    // same block, after
  CHECK_FALSE(after_wrap_of(m.model, wraps, m.call("net.cuda(2)"), "net"));  // the else arm
  CHECK_FALSE(after_wrap_of(m.model, wraps, m.call("net.cuda(3)"), "net"));  // after the if: not on every path
}

TEST_CASE("tensor_valued: torch results, module forwards, tensor methods; unknown stays false") {
  Model m(R"(import torch
import torch.nn as nn
criterion = nn.CrossEntropyLoss()
net = nn.Linear(4, 2).cuda()
def step(x, y, other):
    out = net(x)
    loss = criterion(out, y)
    acc = (out.argmax(1) == y).float().mean()
    n = torch.nn.utils.clip_grad_norm_(net.parameters(), 1.0)
    use(a=loss, b=acc, c=n, d=loss.item(), e=other, f=torch.isnan(loss), g=loss * 2, h=out[0], i=other.loss,
        j=torch.cuda.device_count(), k=x)
)");
  auto arg = [&](const char* kw) { return m.model.argument(m.call("use("), kw); };
  for (const char* kw : {"a", "b", "c", "f", "g", "h"}) {
    CAPTURE(kw);
    CHECK(tensor_valued(m.model, arg(kw)));
  }
  for (const char* kw : {"d", "e", "i", "j", "k"}) {
    CAPTURE(kw);
    CHECK_FALSE(tensor_valued(m.model, arg(kw)));
  }
}

TEST_CASE("accumulation conditions are periodic guards; device pins are found once per file") {
  Model m(R"(import os, torch
def train(model, loader, opt, accum):
    for i, b in enumerate(loader):
        model(b).backward()
        if (i + 1) % accum == 0:
            opt.step()
torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
)");
  CHECK((m.model.enclosing_guards(m.call("opt.step").node) & kGuardPeriodic));
  Pins pins = collect_pins(m.model);
  CHECK(pins.any());
  CHECK(pins.before(m.model, m.call("model(b)").node));  // a pin in another scope counts
}
