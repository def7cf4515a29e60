// The launch model (linter/launch_model.hpp): languages, environment scopes,
// launchers in their spellings, options, #SBATCH directives, variables and
// the GPUs a node offers a launch.
#include <doctest/doctest.h>

#include "linter/launch_model.hpp"
#include "linter/lint.hpp"
#include "rules/registry.hpp"

using namespace ddplint;

namespace {
struct Parsed {
  SourceFile source;
  SyntaxTree tree;
  LaunchModel model;
  explicit Parsed(std::string text)
      : source("run.sh", std::move(text)), tree(parse_shell(source)), model(source, tree) {}
  std::string text_of(const ShellWord& w) const { return std::string(model.text(w.start, w.end)); }
};
}  // namespace

TEST_CASE("launch scripts are recognised by extension or by a sh/bash shebang") {
  CHECK(language_of("run.sh", "") == Language::Shell);
  CHECK(language_of("jobs/train.slurm", "") == Language::Shell);
  CHECK(language_of("a.sbatch", "") == Language::Shell);
  CHECK(language_of("a.bash", "") == Language::Shell);
  CHECK(language_of("train.py", "#!/bin/bash\n") == Language::Python);
  CHECK(language_of("launch", "#!/usr/bin/env bash\necho\n") == Language::Shell);
  CHECK(language_of("launch", "#!/bin/sh -l\n") == Language::Shell);
  CHECK(language_of("launch", "#!/usr/bin/env -S bash -e\n") == Language::Shell);
  CHECK(language_of("launch", "#!/usr/bin/env python3\n") == Language::Python);
  CHECK(language_of("launch", "#!/bin/zsh\n") == Language::Python);
  CHECK(language_of(".sh", "") == Language::Python);  // a dot file, not a shell script
  CHECK(language_of("-", "#!/bin/bash\n") == Language::Python);  // standard input without --stdin-filename
  CHECK(language_of("dir/-", "#!/bin/bash\n") == Language::Shell);  // a file named `-` in a folder
  CHECK(language_of("README.md", "# title\n") == Language::Shell);  // its shell blocks
  CHECK(language_of("docs/x.markdown", "") == Language::Shell);
  CHECK(language_of(".md", "") == Language::Python);
}

TEST_CASE("Markdown: only fenced shell blocks are kept, at their offsets; prompts and output blanked") {
  const std::string md =
      "Run `torchrun x.py` like this:\n"
      "```bash\n"
      "$ torchrun --nproc_per_node=2 a.py\n"
      "export A=1\n"
      "```\n"
      "~~~python\n"
      "os.system('torchrun b.py')\n"
      "~~~\n"
      "  ```console\n"
      "  $ torchrun c.py \\\n"
      "      --lr 1\n"
      "  torchrun d.py (output)\n"
      "  ```\n"
      "``` sh {.copy}\r\n"
      "torchrun e.py\r\n"
      "````\n"
      "```\n"
      "import os; os.system('torchrun g.py')\n"
      "```\n"
      "```\n"
      "\n"
      "torchrun f.py\n"
      "~~~ not the closing fence\n";
  std::string view = markdown_shell_view(md);
  REQUIRE(view.size() == md.size());
  for (std::size_t i = 0; i < md.size(); ++i)
    if (md[i] == '\n' || md[i] == '\r') CHECK(view[i] == md[i]);
  CHECK(view.find("x.py") == std::string::npos);  // prose
  CHECK(view.find("$") == std::string::npos);     // prompts
  CHECK(view.find("torchrun --nproc_per_node=2 a.py") == md.find("torchrun --nproc_per_node=2 a.py"));
  CHECK(view.find("export A=1") != std::string::npos);
  CHECK(view.find("b.py") == std::string::npos);  // a Python block
  CHECK(view.find("torchrun c.py") != std::string::npos);
  CHECK(view.find("--lr 1") != std::string::npos);  // continues the prompted command
  CHECK(view.find("d.py") == std::string::npos);    // output
  CHECK(view.find("torchrun e.py") != std::string::npos);  // closed by a longer fence
  CHECK(view.find("g.py") == std::string::npos);  // a block without a language that starts otherwise
  CHECK(view.find("torchrun f.py") != std::string::npos);  // one whose first line launches
  SourceFile source("README.md", md);
  SyntaxTree tree = parse_shell(source);
  LaunchModel model(source, tree);
  REQUIRE(model.launches().size() == 4);

  // each block alone: a `<placeholder>` is an unknown value, not redirections
  // that take the next block's first word; a block that does not parse alone is not read
  const std::string placeholders =
      "```bash\n"
      "torchrun --nproc_per_node <num-gpus> a.py --data <imagenet-path>\n"
      "```\n"
      "```bash\n"
      "echo \"unclosed\n"
      "```\n"
      "```bash\n"
      "torchrun b.py < in.txt > out.txt\n"
      "```\n"
      "```bash\n"
      "torchrun c.py \\\n"
      "  --epochs 300 \\\n"
      "```\n";
  std::string v2 = markdown_shell_view(placeholders);
  CHECK(v2.find("unclosed") == std::string::npos);
  CHECK(v2.find("$num_gpus_") != std::string::npos);
  CHECK(v2.find("< in.txt > out.txt") != std::string::npos);  // real redirections stay
  SourceFile md2("README.md", placeholders);
  SyntaxTree tree2 = parse_shell(md2);
  LaunchModel model2(md2, tree2);
  REQUIRE(model2.launches().size() == 3);  // the last one's `\` before the fence continues into nothing
  const LaunchOption* procs = model2.launches()[0].option("nproc-per-node");
  REQUIRE(procs != nullptr);
  CHECK_FALSE(procs->value->value.has_value());  // a placeholder: not known
  CHECK(model.text(model.launches()[0].start, model.launches()[0].end) == "torchrun --nproc_per_node=2 a.py");
}

TEST_CASE("environment settings keep their scope; conditional ones are marked") {
  Parsed p(
      "export A=1\n"
      "B=2\n"
      "C=3 torchrun train.py\n"
      "env D=4 python train.py\n"
      "if true; then export E=5; fi\n"
      "declare -x F=6\n"
      "export B\n"
      "true || export G=7\n");
  const auto& env = p.model.env_settings();
  auto find = [&](std::string_view name) -> const EnvSetting* {
    for (const EnvSetting& s : env)
      if (s.name == name) return &s;
    return nullptr;
  };
  REQUIRE(find("A"));
  CHECK(find("A")->scope == EnvSetting::Scope::Exported);
  CHECK(*find("A")->value.value == "1");
  CHECK(find("B")->scope == EnvSetting::Scope::Shell);
  CHECK(find("C")->scope == EnvSetting::Scope::Command);
  REQUIRE(find("D"));
  CHECK(find("D")->scope == EnvSetting::Scope::Command);
  CHECK(*find("D")->value.value == "4");
  CHECK(find("E")->conditional);
  CHECK_FALSE(find("A")->conditional);
  CHECK(find("F")->scope == EnvSetting::Scope::Exported);
  REQUIRE(find("G"));
  CHECK(find("G")->conditional);
  // `export B` after `B=2`: exported with the shell variable's value
  int exported_b = 0;
  for (const EnvSetting& s : env)
    if (s.name == "B" && s.scope == EnvSetting::Scope::Exported && s.value.value == std::optional<std::string>("2"))
      ++exported_b;
  CHECK(exported_b == 1);
}

TEST_CASE("launchers in every spelling, with their options and the script") {
  Parsed p(
      "torchrun --nproc_per_node=4 --standalone train.py --batch_size 8 --amp\n"
      "python -m torch.distributed.launch --nproc-per-node 2 --use_env main.py\n"
      "python3 -u -m torch.distributed.run --nnodes 1:2 main.py\n"
      "accelerate launch --multi_gpu --num_processes 8 train_lora.py --lr=1e-4\n"
      "deepspeed --num_gpus 8 finetune.py --deepspeed ds.json\n"
      "srun --ntasks-per-node=1 -N 2 python train.py\n"
      "CUDA_VISIBLE_DEVICES=0 nohup python -m my.pkg.train --epochs 3 &\n"
      "python -c 'print(1)'\n"
      "echo torchrun train.py\n");
  const auto& l = p.model.launches();
  REQUIRE(l.size() == 7);
  CHECK(l[0].launcher == Launcher::Torchrun);
  REQUIRE(l[0].option("nproc-per-node"));
  CHECK(*l[0].option("nproc-per-node")->value->value == "4");
  CHECK(l[0].option("nproc-per-node")->written == "--nproc_per_node");
  CHECK(l[0].option("standalone"));
  CHECK_FALSE(l[0].option("standalone")->value);
  REQUIRE(l[0].script);
  CHECK(*l[0].script->value == "train.py");
  REQUIRE(l[0].script_options.size() == 2);
  CHECK(l[0].script_options[0].name == "batch-size");
  CHECK(*l[0].script_options[0].value->value == "8");
  CHECK(l[0].script_options[1].name == "amp");

  CHECK(l[1].launcher == Launcher::TorchDistributedLaunch);
  CHECK(p.model.text(l[1].launcher_start, l[1].launcher_end) == "python -m torch.distributed.launch");
  CHECK(l[1].option("use-env"));
  CHECK(*l[1].script->value == "main.py");
  CHECK(l[2].launcher == Launcher::TorchDistributedRun);
  CHECK(*l[2].option("nnodes")->value->value == "1:2");
  CHECK(l[3].launcher == Launcher::Accelerate);
  CHECK(l[3].option("multi-gpu"));
  CHECK(*l[3].option("num-processes")->value->value == "8");
  CHECK(*l[3].script->value == "train_lora.py");
  CHECK(l[4].launcher == Launcher::DeepSpeed);
  CHECK(*l[4].script->value == "finetune.py");
  CHECK(l[5].launcher == Launcher::Python);
  REQUIRE(l[5].wrappers.size() == 1);
  CHECK(l[5].wrappers[0] == "srun");
  CHECK(*l[5].wrapper_option({"N", "nodes"})->value->value == "2");
  CHECK(*l[5].script->value == "train.py");
  CHECK(l[6].module);
  CHECK(*l[6].script->value == "my.pkg.train");
  REQUIRE(p.model.env_value(l[6], "CUDA_VISIBLE_DEVICES"));
  CHECK(*p.model.env_value(l[6], "CUDA_VISIBLE_DEVICES") == "0");
}

TEST_CASE("variables: one unconditional assignment before the use is known; anything else is not") {
  Parsed p(
      "N=4\n"
      "M=$N\n"
      "torchrun --nproc_per_node=$M --nnodes=${N} train.py\n"
      "torchrun --nproc_per_node=$1 --nnodes=${K:-2} train.py\n"
      "if x; then L=2; fi\n"
      "torchrun --nproc_per_node=$L --nnodes=\"$N\"'' train.py\n"
      "torchrun --nproc_per_node=$(nproc) train.py\n");
  const auto& l = p.model.launches();
  REQUIRE(l.size() == 4);
  CHECK(*l[0].option("nproc-per-node")->value->value == "4");
  CHECK(*l[0].option("nnodes")->value->value == "4");
  CHECK_FALSE(l[1].option("nproc-per-node")->value->value);
  CHECK_FALSE(l[1].option("nnodes")->value->value);
  CHECK_FALSE(l[2].option("nproc-per-node")->value->value);
  CHECK(*l[2].option("nnodes")->value->value == "4");
  CHECK_FALSE(l[3].option("nproc-per-node")->value->value);
}

TEST_CASE("#SBATCH directives are read until the first command; GPUs per node from them or CUDA_VISIBLE_DEVICES") {
  Parsed p(
      "#!/bin/bash\n"
      "#SBATCH --nodes=2\n"
      "#SBATCH -N 1\n"
      "#SBATCH --gres=gpu:v100:4 # four per node\n"
      "module load cuda\n"
      "#SBATCH --gpus-per-node=8\n"
      "torchrun --nproc_per_node 4 train.py\n"
      "CUDA_VISIBLE_DEVICES=0,1 torchrun --nproc_per_node 4 train.py\n"
      "export CUDA_VISIBLE_DEVICES=\n"
      "torchrun train.py\n");
  REQUIRE(p.model.sbatch().size() == 3);
  CHECK(p.model.sbatch_option({"nodes", "N"})->option.value->value == std::optional<std::string>("1"));
  CHECK(p.model.sbatch_option({"gpus-per-node"}) == nullptr);  // after the first command: not read by sbatch
  const auto& l = p.model.launches();
  REQUIRE(l.size() == 3);
  REQUIRE(p.model.gpus_per_node(l[0]));
  CHECK(p.model.gpus_per_node(l[0])->count == 4);
  CHECK(p.model.gpus_per_node(l[1])->count == 2);
  CHECK(p.model.gpus_per_node(l[2])->count == 0);
  CHECK(p.model.header_end() == p.source.text().find("module"));
}

TEST_CASE("hostile shell input: deep nesting, unterminated quotes, binary-looking bytes") {
  std::string deep;
  for (int i = 0; i < 5000; ++i) deep += "( ";
  deep += "torchrun --standalone --nnodes 2 train.py";
  for (int i = 0; i < 5000; ++i) deep += " )";
  for (const std::string& text : {deep, std::string("export A=\"unterminated\ntorchrun --nnodes"),
                                  std::string("torchrun --nproc_per_node= --=x -- --\n"),
                                  std::string("srun srun srun srun srun srun srun srun srun srun srun srun srun srun "
                                              "srun srun srun srun python t.py\n")}) {
    SourceFile f("x.sh", text);
    LintResult r = lint(f, rules::all(), RuleSelection{});
    CHECK(r.error.empty());
  }
}

TEST_CASE("processes per node and world size of each launch; options after the script that may be anything") {
  Parsed p(
      "#!/bin/bash\n"
      "#SBATCH --gpus-per-node=4\n"
      "torchrun --nproc_per_node=8 --nnodes=2 train.py --workers 8\n"
      "torchrun train.py \"$@\"\n"
      "python -m torch.distributed.launch --nproc_per_node gpu train.py\n"
      "torchrun --nnodes=1:4 --nproc-per-node=2 train.py $EXTRA --lr 0.1\n"
      "srun --ntasks-per-node=2 torchrun --nproc_per_node=4 --nnodes=2 train.py\n"
      "srun --ntasks-per-node=4 python train.py\n"
      "python train.py\n"
      "accelerate launch --num_processes 8 train.py\n"
      "torchrun $ARGS train.py\n");
  const auto& l = p.model.launches();
  REQUIRE(l.size() == 9);
  CHECK(p.model.processes_per_node(l[0]) == 8);
  CHECK(p.model.world_size(l[0]) == 16);
  CHECK_FALSE(l[0].opaque_script_options);
  REQUIRE(l[0].script_options.size() == 1);
  CHECK(l[0].script_options[0].written == "--workers");
  CHECK(p.model.processes_per_node(l[1]) == 1);  // torchrun's default
  CHECK(p.model.world_size(l[1]) == 1);
  CHECK(l[1].opaque_script_options);
  CHECK(p.model.processes_per_node(l[2]) == 4);  // one per GPU of the header
  CHECK(p.model.world_size(l[3]) == std::nullopt);  // an elastic range of nodes
  CHECK(p.model.processes_per_node(l[3]) == 2);
  CHECK(l[3].opaque_script_options);
  CHECK(p.model.processes_per_node(l[4]) == 8);  // two srun tasks, each a launcher of 4
  CHECK(p.model.world_size(l[4]) == std::nullopt);  // srun repeats the launcher
  CHECK(p.model.processes_per_node(l[5]) == std::nullopt);  // srun may give each task its own GPU
  CHECK(p.model.processes_per_node(l[6]) == 1);
  CHECK(p.model.world_size(l[6]) == std::nullopt);
  CHECK(p.model.processes_per_node(l[7]) == std::nullopt);  // accelerate: a config file may say more
  CHECK(p.model.processes_per_node(l[8]) == std::nullopt);  // $ARGS may hold --nproc-per-node
}

TEST_CASE("launches not read: words naming a Python file elsewhere; hand-started processes; abbreviations; `--`") {
  Parsed p(
      "#!/bin/bash\n"
      "uv run python train.py\n"
      "CMD=\"torchrun other.py --lr 1\"\n"
      "python launcher.py train.py\n"
      "for r in 0 1; do RANK=$r python train.py & done\n"
      "python train.py &\n"
      "torchrun --nproc 8 train.py\n"
      "torchrun --nnode 2 train.py\n"
      "python train.py -- --workers 0\n");
  std::vector<std::string> named;
  for (const ShellWord& w : p.model.unread_scripts()) named.push_back(*w.value);
  CHECK(named == std::vector<std::string>{"other.py", "train.py", "train.py"});  // (assignments first)
  const auto& l = p.model.launches();
  REQUIRE(l.size() == 6);  // launcher.py, two train.py by hand, two torchrun, the last
  CHECK(p.model.processes_per_node(l[0]) == 1);  // launcher.py itself
  CHECK(p.model.processes_per_node(l[1]) == std::nullopt);  // in a loop, given a RANK
  CHECK(l[2].background);
  CHECK(p.model.processes_per_node(l[2]) == std::nullopt);
  CHECK(p.model.processes_per_node(l[3]) == std::nullopt);  // `--nproc` abbreviates --nproc-per-node
  CHECK(p.model.processes_per_node(l[4]) == 1);
  CHECK(p.model.world_size(l[4]) == std::nullopt);  // `--nnode` abbreviates --nnodes
  CHECK(l[5].script_options.empty());  // after `--`, argparse reads positionals only
  CHECK(l[5].positional_script_arguments);
}
