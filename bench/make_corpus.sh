#!/usr/bin/env bash
# Builds the benchmark corpora under bench/corpus/ (ignored by git):
#   torch/  >= 20 MB of torch training scripts generated from the project's own
#           examples/ and fixtures/, each copy varied (renamed identifiers,
#           different constants), so no two files are identical;
#   mixed/  the system Python's standard library (few files mention torch).
# Usage: bench/make_corpus.sh [TARGET_MB [OUT_DIR]]   (default 20, bench/corpus)
set -euo pipefail
out=$(realpath -m "${2:-$(dirname "$0")/corpus}")
cd "$(dirname "$0")/.."
target_mb=${1:-20}
rm -rf "$out/torch" "$out/mixed"
mkdir -p "$out/torch" "$out/mixed"
# each corpus is a project of its own (linter/project.hpp), not part of the repository's
for d in "$out/torch" "$out/mixed"; do echo "# a ddplint benchmark corpus" > "$d/pyproject.toml"; done

perl -e '
  use strict; use warnings;
  my ($out, $target) = @ARGV[0, 1];
  my @files = glob("examples/*.py fixtures/*/*.py");
  my @src = map { local $/; open(my $f, "<", $_) or die "$_: $!"; scalar <$f> } @files;
  my @names = qw(model loader optimizer loss batch images labels scaler sampler step epoch args world_size local_rank);
  my ($bytes, $round) = (0, 0);
  while ($bytes < $target * 1024 * 1024) {
    $round++;
    for my $i (0 .. $#src) {
      my $text = $src[$i];
      my $k = ($round + $i) % @names;
      my $name = $names[$k];
      $text =~ s/\b$name\b/${name}_v$round/g;             # rename one identifier
      $text =~ s/num_workers=(\d+)/"num_workers=" . (($1 + $round) % 9)/ge;
      $text =~ s/\bbatch_size=(\d+)/"batch_size=" . ($1 + $round)/ge;
      $text .= "\n# variant $round of $files[$i]\n";
      my $path = sprintf("%s/r%04d_%03d.py", $out, $round, $i);
      open(my $f, ">", $path) or die "$path: $!"; print $f $text; close $f;
      $bytes += length $text;
    }
  }
  printf STDERR "torch corpus: %d rounds, %.1f MB\n", $round, $bytes / 1048576;
' "$out/torch" "$target_mb"

stdlib=$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["stdlib"])' 2>/dev/null || echo /usr/lib/python3)
if [ -d "$stdlib" ]; then
  (cd "$stdlib" && find . -name '*.py' -not -path '*/site-packages/*' -print0 | cpio -0pdm --quiet "$out/mixed" 2>/dev/null) ||
    (cd "$stdlib" && find . -name '*.py' -not -path '*/site-packages/*' -exec cp --parents {} "$out/mixed" \;)
fi
du -sh --apparent-size "$out/torch" "$out/mixed" >&2  # bytes of the files, not disk blocks
