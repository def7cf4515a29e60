// Development aid: prints the tree-sitter syntax tree of a Python file
// (S-expression with rows and columns), as the semantic model sees it.
// Usage: ddplint_dump_tree FILE
#include <cstdio>
#include <cstdlib>

#include "linter/source.hpp"
#include "linter/syntax.hpp"

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: ddplint_dump_tree FILE\n");
    return 2;
  }
  std::string err;
  auto bytes = ddplint::read_file(argv[1], err);
  if (!bytes) {
    std::fprintf(stderr, "%s: %s\n", argv[1], err.c_str());
    return 2;
  }
  ddplint::SourceFile source(argv[1], std::move(*bytes));
  ddplint::SyntaxTree tree = ddplint::parse_python(source);
  char* s = ts_node_string(tree.root());
  std::printf("%s\n", s);
  std::free(s);
  return 0;
}
