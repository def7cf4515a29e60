#include "linter/syntax.hpp"

#include "linter/tree_walk.h"

#include <cstring>
#include <stdexcept>
#include <string>

namespace ddplint {

namespace {
TSSymbol named_symbol(const TSLanguage* lang, const char* name) {
  TSSymbol s = ts_language_symbol_for_name(lang, name, static_cast<uint32_t>(std::strlen(name)), true);
  if (s == 0) throw std::logic_error(std::string("tree-sitter-python has no node kind ") + name);
  return s;
}
TSFieldId field_id(const TSLanguage* lang, const char* name) {
  TSFieldId f = ts_language_field_id_for_name(lang, name, static_cast<uint32_t>(std::strlen(name)));
  if (f == 0) throw std::logic_error(std::string("tree-sitter-python has no field ") + name);
  return f;
}

}  // namespace

Kinds make_kinds() {
  const TSLanguage* L = tree_sitter_python();
  Kinds k{};
  auto s = [&](const char* n) { return named_symbol(L, n); };
  k.module = s("module");
  k.identifier = s("identifier");
  k.attribute = s("attribute");
  k.call = s("call");
  k.argument_list = s("argument_list");
  k.keyword_argument = s("keyword_argument");
  k.list_splat = s("list_splat");
  k.dictionary_splat = s("dictionary_splat");
  k.import_statement = s("import_statement");
  k.import_from_statement = s("import_from_statement");
  k.aliased_import = s("aliased_import");
  k.dotted_name = s("dotted_name");
  k.wildcard_import = s("wildcard_import");
  k.assignment = s("assignment");
  k.augmented_assignment = s("augmented_assignment");
  k.expression_statement = s("expression_statement");
  k.for_statement = s("for_statement");
  k.while_statement = s("while_statement");
  k.if_statement = s("if_statement");
  k.elif_clause = s("elif_clause");
  k.else_clause = s("else_clause");
  k.with_statement = s("with_statement");
  k.with_clause = s("with_clause");
  k.with_item = s("with_item");
  k.function_definition = s("function_definition");
  k.decorated_definition = s("decorated_definition");
  k.decorator = s("decorator");
  k.class_definition = s("class_definition");
  k.lambda = s("lambda");
  k.block = s("block");
  k.comparison_operator = s("comparison_operator");
  k.boolean_operator = s("boolean_operator");
  k.not_operator = s("not_operator");
  k.binary_operator = s("binary_operator");
  k.unary_operator = s("unary_operator");
  k.parenthesized_expression = s("parenthesized_expression");
  k.integer = s("integer");
  k.float_ = s("float");
  k.string = s("string");
  k.string_content = s("string_content");
  k.interpolation = s("interpolation");
  k.concatenated_string = s("concatenated_string");
  k.true_ = s("true");
  k.false_ = s("false");
  k.none = s("none");
  k.conditional_expression = s("conditional_expression");
  k.comment = s("comment");
  k.subscript = s("subscript");
  k.tuple = s("tuple");
  k.list = s("list");
  k.pattern_list = s("pattern_list");
  k.tuple_pattern = s("tuple_pattern");
  k.list_comprehension = s("list_comprehension");
  k.generator_expression = s("generator_expression");
  k.dictionary_comprehension = s("dictionary_comprehension");
  k.set_comprehension = s("set_comprehension");
  k.typed_parameter = s("typed_parameter");
  k.default_parameter = s("default_parameter");
  k.typed_default_parameter = s("typed_default_parameter");
  k.parameters = s("parameters");
  k.return_statement = s("return_statement");
  k.named_expression = s("named_expression");
  k.try_statement = s("try_statement");
  k.expression_list = s("expression_list");
  k.print_statement = s("print_statement");
  k.exec_statement = s("exec_statement");
  auto f = [&](const char* n) { return field_id(L, n); };
  k.f_name = f("name");
  k.f_alias = f("alias");
  k.f_module_name = f("module_name");
  k.f_function = f("function");
  k.f_arguments = f("arguments");
  k.f_object = f("object");
  k.f_attribute = f("attribute");
  k.f_left = f("left");
  k.f_right = f("right");
  k.f_value = f("value");
  k.f_body = f("body");
  k.f_condition = f("condition");
  k.f_consequence = f("consequence");
  k.f_alternative = f("alternative");
  k.f_operator = f("operator");
  k.f_parameters = f("parameters");
  k.f_definition = f("definition");
  k.f_subscript = f("subscript");
  k.f_operators = f("operators");
  k.f_argument = f("argument");
  return k;
}

NodeList children(TSNode node, bool named_only) {
  NodeList list;
  std::size_t n = ddplint_children(node, named_only, list.fill(NodeList::kInline), NodeList::kInline);
  TSNode* out = list.fill(n);  // the first kInline are in place already
  if (n > NodeList::kInline) ddplint_children(node, named_only, out, n);
  return list;
}

SyntaxTree parse_python(const SourceFile& source, const SyntaxTree* previous) {
  std::unique_ptr<TSParser, void (*)(TSParser*)> parser(ts_parser_new(), &ts_parser_delete);
  if (!parser || !ts_parser_set_language(parser.get(), tree_sitter_python())) return {};
  std::string_view text = source.text();
  // tree-sitter-python takes a lone \r (old Mac line endings) for a space, so
  // the statements of such a file run together into a syntax error. The
  // parser gets a copy in which each lone \r is \n: the same length, so every
  // byte offset, and the rows (LineIndex breaks lines at a lone \r too), match
  // the file's own text.
  std::string universal_newlines;  // the copy, made at the first lone \r (most files have none)
  const char* end = text.data() + text.size();
  for (const char* p = text.data(); (p = static_cast<const char*>(std::memchr(p, '\r', static_cast<std::size_t>(end - p))));
       ++p) {
    if (p + 1 != end && p[1] == '\n') continue;  // the first half of a CRLF
    if (universal_newlines.empty()) universal_newlines.assign(text);
    universal_newlines[static_cast<std::size_t>(p - text.data())] = '\n';
  }
  const bool lone_cr = !universal_newlines.empty();
  if (lone_cr) text = universal_newlines;
  if (source.bom_length() > 0) {
    TSRange range{};
    range.start_byte = source.bom_length();
    range.start_point = {0, source.bom_length()};
    range.end_byte = static_cast<uint32_t>(text.size());
    range.end_point = {UINT32_MAX, UINT32_MAX};
    ts_parser_set_included_ranges(parser.get(), &range, 1);
  }
  // (deleting the \n of a CRLF turns the \r before the edit into a line
  // break: a byte outside the edited range reads differently; parsed afresh)
  TSTree* old = previous != nullptr && !lone_cr && !previous->universal_newlines() ? previous->get() : nullptr;
  TSTree* tree = ts_parser_parse_string_encoding(parser.get(), old, text.data(),
                                                 static_cast<uint32_t>(text.size()), TSInputEncodingUTF8);
  return SyntaxTree(tree, lone_cr);
}

}  // namespace ddplint
