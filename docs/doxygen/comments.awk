# Doxygen input filter: recur's headers document themselves with plain // comments. This
# turns them into Doxygen comments as Doxygen reads each header (the files are not changed):
#   - "#pragma once", every header's first line, becomes "/// @file": the comment below it
#     describes the file (and warnings keep the header's own line numbers);
#   - a // line above a declaration documents it (///);
#   - a // comment after code on the same line documents that member (///<);
#   - "// ----" section rules, NOLINT notes, comments on preprocessor lines and after a
#     closing brace stay plain.
#   - an op family's list, RECUR_DECLARE_UNARY_OPS(exp, log) or RECUR_DECLARE_BINARY_OPS(...)
#     (ops/declare.hpp), is written out as the declarations it makes, on the same line:
#     it expands through Boost.Preprocessor, which Doxygen's preprocessor cannot run.
# Doxygen runs it on every header it reads (docs/doxygen/Doxyfile, INPUT_FILTER).
function family(line,    inner, names, n, i, name, out) {
  inner = line
  sub(/^[^(]*\(/, "", inner)
  sub(/\).*$/, "", inner)
  n = split(inner, names, ",")
  out = ""
  for (i = 1; i <= n; i++) {
    name = names[i]
    gsub(/[ \t]/, "", name)
    if (line ~ /UNARY/) out = out "Tensor " name "(const Tensor& x); Var " name "(const Var& x); "
    else out = out "Tensor " name "(const Tensor& a, const Tensor& b); Var " name "(const Var& a, const Var& b); "
  }
  return out
}
function plain(line) { return line ~ /^[ \t]*#/ || line ~ /\/\/ *-{3,}/ || line ~ /NOLINT/ }
{
  line = $0
  if (NR == 1 && line ~ /^#pragma once/) {
    line = "/// @file"
  } else if (line ~ /^RECUR_DECLARE_(UNARY|BINARY)_OPS\(/) {
    line = family(line)
  } else if (!plain(line)) {
    if (line ~ /^[ \t]*\/\//) sub(/\/\//, "///", line)
    else if (line ~ /[^ \t].*[ \t]\/\/ / && line !~ /^[ \t]*}/ && line !~ /"[^"]*\/\/[^"]*"/) sub(/[ \t]\/\/ /, " ///< ", line)
  }
  print line
}
