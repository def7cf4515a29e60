// The PyTorch releases a project supports: read from what the project
// declares (requirements*.txt, setup.py and setup.cfg install_requires,
// pyproject.toml dependencies, a conda *environment*.yml, Cog's cog.yaml; else the release its
// README's installation section states or installs, through the requirements,
// environment files and set-up scripts its commands name; else the
// environments kept in an env/, envs/, conda/ or requirements/ folder), or set by the
// `target-torch` setting. Rules whose advice depends on the release (an API's
// first release, a deprecation's) ask it through RuleOptions::torch.
#pragma once

#include <compare>
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>

namespace ddplint {

/// A PyTorch release: the release segment of its version (PEP 440), without
/// pre-, post-, dev- or local parts (`1.8.0+cu111` is 1.8.0).
struct TorchVersion {
  int major = 0;
  int minor = 0;
  int patch = 0;
  auto operator<=>(const TorchVersion&) const = default;
  bool operator==(const TorchVersion&) const = default;
  /// "2.3" (patch 0 left out) or "1.13.1".
  std::string to_string() const;
  /// "2", "2.3", "2.3.1", "1.8.0+cu111", "2.1.0a0"; std::nullopt for anything
  /// else (no leading number, a component over 9999).
  static std::optional<TorchVersion> parse(std::string_view text);
};

/// The PyTorch releases a project supports: [lowest, below). An unset bound
/// is not declared.
struct TorchSupport {
  std::optional<TorchVersion> lowest;  ///< the oldest supported release (inclusive)
  std::optional<TorchVersion> below;   ///< every supported release is older than this
  /// The declaration as written (`torch>=1.7.0,!=1.12.0`, `pytorch=1.13.1`,
  /// `target-torch = "2.1"`); empty when nothing is declared.
  std::string written;
  /// Where: `requirements.txt:11`, the file shown relative to the working
  /// folder (absolute outside it), and its 1-based line.
  std::string origin;

  /// Something names torch (with or without a version).
  bool declared() const { return !origin.empty(); }
  /// A bound is declared: without one, pip installs the newest release, so
  /// the current release is assumed.
  bool bounded() const { return lowest.has_value() || below.has_value(); }
  /// Some supported release is `v` or newer (true when no upper bound is declared).
  bool reaches(TorchVersion v) const { return !below || v < *below; }
  /// Every supported release is `v` or newer. With no bound at all the
  /// current release is assumed (true); an upper bound without a lower one
  /// admits old releases (false).
  bool all_at_least(TorchVersion v) const {
    if (lowest) return !(*lowest < v);
    return !below.has_value();
  }
  /// `torch>=1.7.0,!=1.12.0 (requirements.txt:11)`, as messages name it.
  std::string describe() const { return written + " (" + origin + ")"; }
  bool operator==(const TorchSupport&) const = default;
};

/// The range of one requirement on torch, or std::nullopt when `requirement`
/// is not one. `conda`: a conda match spec (`pytorch=1.13.1=py3.9_0`,
/// `pytorch>=1.10`, `pytorch 1.13.*`, `conda-forge::pytorch`), else PEP 508
/// (`torch>=1.8,<2; python_version>"3.8"`, `torch==1.8.0+cu111`, `torch @ URL`
/// whose wheel name gives the version). Specifiers: `==` (and `==X.*`), `~=`,
/// `>=`, `>`, `<=`, `<`; `!=` narrows nothing here. The result's
/// `written` is the requirement trimmed; `origin` is left empty.
std::optional<TorchSupport> torch_requirement(std::string_view requirement, bool conda = false);

/// Adds `more` to the declarations united so far in `into`: the widest range
/// (an unset bound is open). The first declaration keeps naming the union
/// (`written`, `origin`).
void unite(std::optional<TorchSupport>& into, TorchSupport more);

/// The range of a Poetry constraint (`^2.1`, `~2.1`, `>=2.0,<3`, `2.1.*`, `*`).
std::optional<TorchSupport> poetry_constraint(std::string_view constraint);

/// What the files directly in folder `dir` declare about torch, united (the
/// widest range over them): pyproject.toml, setup.py (not in a package:
/// there it is a module), setup.cfg, requirements*.txt (following `-r`
/// includes, narrowed by `-c` constraints files: pip's constraints install
/// nothing, so a file that only constrains torch declares nothing), conda's
/// *environment*.yml and conda*.yml (or .yaml), Cog's cog.yaml
/// (`build.python_packages`, `build.python_requirements`); where none
/// of these bounds the release, the one README.md (else INSTALL.md, either
/// in any case) states in
/// an installation section (a README without headings is one): a `pip
/// install torch==X` / `conda install pytorch=X` in a shell block or inline
/// code, a `pip install -r FILE [-c FILE]`, a `conda env create -f FILE`, a
/// project script it runs (`./tools/setup.sh`, whose install commands count)
/// (after the block's `cd`; `git clone URL` then `cd` into it is this
/// folder), or a list item or sentence naming PyTorch with a version
/// ("* PyTorch 1.11.0", "tested with PyTorch 1.10.0"), read as the oldest
/// supported release; where that bounds nothing either, the requirements and
/// environment files of an env/, envs/, environment(s)/, conda/ or
/// requirements/ folder beside it, united.
/// std::nullopt when none names torch. Unreadable or malformed files add
/// nothing. `shown_from`: the working folder, against
/// which origins are shown (empty: absolute paths).
std::optional<TorchSupport> declared_torch_in(const std::filesystem::path& dir,
                                              const std::filesystem::path& shown_from);

/// The first releases of the APIs rules advise, from PyTorch's sources and
/// release notes.
namespace torch_release {
/// `torch.autocast(device_type, ...)`: PyTorch 1.10 (its torch.cuda.amp.autocast
/// subclasses torch.autocast_mode.autocast).
inline constexpr TorchVersion kAutocast{1, 10, 0};
/// `torch.amp.autocast(device_type, ...)`: documented in PyTorch 1.13's
/// torch/cuda/amp/autocast_mode.py (subclass of torch.amp.autocast_mode.autocast).
inline constexpr TorchVersion kAmpAutocast{1, 13, 0};
/// `torch.amp.GradScaler("cuda", ...)`: PyTorch 2.3, which also starts warning
/// on `torch.cuda.amp.GradScaler(...)` (a FutureWarning from 2.4).
inline constexpr TorchVersion kAmpGradScaler{2, 3, 0};
/// `torch.amp.custom_fwd/custom_bwd(device_type=...)`: PyTorch 2.4, which
/// deprecates the torch.cuda.amp ones and torch.cuda.amp.autocast (FutureWarning).
inline constexpr TorchVersion kAmpCustomFwd{2, 4, 0};
inline constexpr TorchVersion kCudaAmpDeprecated{2, 4, 0};
}  // namespace torch_release

}  // namespace ddplint
