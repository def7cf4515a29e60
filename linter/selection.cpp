#include "linter/selection.hpp"

#include <algorithm>
#include <cctype>

#include "linter/output.hpp"

namespace ddplint {

std::string_view to_string(Severity s) {
  switch (s) {
    case Severity::Error: return "error";
    case Severity::Warning: return "warning";
    case Severity::Info: return "info";
  }
  return "warning";
}

namespace {
// Length of the longest item of `prefixes` that matches `code` (ALL counts as 0), or -1.
// `exact`: only an item equal to the code matches (an opt-in rule's select).
int longest_match(const std::vector<std::string>& prefixes, std::string_view code, bool exact = false) {
  int best = -1;
  for (const auto& p : prefixes) {
    if (exact) {
      if (p == code) best = static_cast<int>(p.size());
    } else if (p == "ALL") best = std::max(best, 0);
    else if (code.substr(0, p.size()) == p) best = std::max(best, static_cast<int>(p.size()));
  }
  return best;
}
}  // namespace

RuleSelection& RuleSelection::add_layer(std::vector<std::string> select, std::vector<std::string> extend_select,
                                        std::vector<std::string> ignore, bool select_given) {
  bool replaces = select_given || !select.empty();
  layers_.push_back(Layer{std::move(select), std::move(extend_select), std::move(ignore), replaces});
  return *this;
}

bool RuleSelection::enabled(std::string_view code, bool opt_in) const {
  bool on = !opt_in;
  for (const Layer& layer : layers_) {
    int sel = std::max(longest_match(layer.select, code, opt_in), longest_match(layer.extend_select, code, opt_in));
    int ign = longest_match(layer.ignore, code);
    if (sel < 0 && ign < 0) on = layer.replaces ? false : on;
    else on = ign < sel;
  }
  return on;
}

std::optional<std::string> unknown_code(const std::vector<std::string>& prefixes, std::span<const Rule> rules) {
  for (const auto& p : prefixes) {
    if (p.empty()) return p;  // "" would match every rule: almost certainly a mistake
    if (p == "ALL") continue;
    bool any = std::any_of(rules.begin(), rules.end(),
                           [&](const Rule& r) { return r.info.code.substr(0, p.size()) == p; });
    if (!any) return p;
  }
  return std::nullopt;
}

std::optional<std::string> RuleSelection::validate(std::span<const Rule> rules) const {
  for (const Layer& layer : layers_)
    for (const auto* list : {&layer.select, &layer.extend_select, &layer.ignore})
      if (auto bad = unknown_code(*list, rules)) return unknown_rule_message(*bad, rules);
  return std::nullopt;
}

namespace {
std::string lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      std::size_t above = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

std::string closest_word(std::string_view word, const std::vector<std::string>& candidates) {
  if (word.size() > 200) return {};  // a megabyte of junk is not compared with every candidate
  std::string lowered = lower(word), best;
  std::size_t best_distance = std::max<std::size_t>(1, lowered.size() / 3) + 1;
  for (const std::string& c : candidates) {
    std::size_t d = edit_distance(lowered, lower(c));
    if (d < best_distance) {
      best_distance = d;
      best = c;
    }
  }
  return best;
}

std::string canonical_selector(std::string_view item, std::span<const Rule> rules) {
  std::string name = lower(item);
  for (const Rule& r : rules)
    if (r.info.name == name) return std::string(r.info.code);
  return upper(item);
}

void canonicalize_selectors(std::vector<std::string>& items, std::span<const Rule> rules) {
  for (std::string& item : items) item = canonical_selector(item, rules);
}

const Rule* find_rule(std::string_view item, std::span<const Rule> rules) {
  std::string code = canonical_selector(item, rules);
  for (const Rule& r : rules)
    if (r.info.code == code) return &r;
  return nullptr;
}

std::string closest_rule_word(std::string_view item, std::span<const Rule> rules) {
  std::vector<std::string> words{"ALL"};
  for (const Rule& r : rules) {
    words.emplace_back(r.info.code);
    words.emplace_back(r.info.name);
  }
  return closest_word(item, words);
}

std::string unknown_rule_message(std::string_view item, std::span<const Rule> rules) {
  std::string message = "unknown rule code or prefix '" + printable(item) + "'";
  std::string hint = closest_rule_word(item, rules);
  if (!hint.empty() && hint != item) message += " (did you mean '" + hint + "'? see --list-rules)";
  else message += " (see --list-rules)";
  return message;
}

std::vector<std::string> split_codes(std::string_view list) {
  std::vector<std::string> out;
  std::size_t i = 0;
  while (i <= list.size()) {
    std::size_t j = list.find(',', i);
    if (j == std::string_view::npos) j = list.size();
    std::string item(list.substr(i, j - i));
    auto not_space = [](unsigned char c) { return !std::isspace(c); };
    item.erase(item.begin(), std::find_if(item.begin(), item.end(), not_space));
    item.erase(std::find_if(item.rbegin(), item.rend(), not_space).base(), item.end());
    if (!item.empty()) out.push_back(std::move(item));
    i = j + 1;
  }
  return out;
}

}  // namespace ddplint
