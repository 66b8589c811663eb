# Doxygen input filter: recur's headers document themselves with plain // comments. This
# turns them into Doxygen comments as Doxygen reads each header (the files are not changed):
#   - "#pragma once", every header's first line, becomes "/// @file": the comment below it
#     describes the file (and warnings keep the header's own line numbers);
#   - a // line above a declaration documents it (///);
#   - a // comment after code on the same line documents that member (///<);
#   - "// ----" section rules, NOLINT notes, comments on preprocessor lines and after a
#     closing brace stay plain.
# Doxygen runs it on every header it reads (docs/doxygen/Doxyfile, INPUT_FILTER).
function plain(line) { return line ~ /^[ \t]*#/ || line ~ /\/\/ *-{3,}/ || line ~ /NOLINT/ }
{
  line = $0
  if (NR == 1 && line ~ /^#pragma once/) {
    line = "/// @file"
  } else if (!plain(line)) {
    if (line ~ /^[ \t]*\/\//) sub(/\/\//, "///", line)
    else if (line ~ /[^ \t].*[ \t]\/\/ / && line !~ /^[ \t]*}/ && line !~ /"[^"]*\/\/[^"]*"/) sub(/[ \t]\/\/ /, " ///< ", line)
  }
  print line
}
