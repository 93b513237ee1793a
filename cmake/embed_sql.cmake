# Writes every schema/*.sql file into a C source as string constants, so the
# binaries carry their schema and migrations (no files to install or lose).
# Migrations are named NNN_name.sql and applied in order; export.sql is the
# format of exported result databases.
file(GLOB files ${DIR}/*.sql)
list(SORT files)
set(body "/* generated from the schema folder by cmake/embed_sql.cmake: do not edit */\n#include <stddef.h>\n")
set(names "")
set(count 0)
foreach(f ${files})
  get_filename_component(name ${f} NAME_WE)
  file(READ ${f} content HEX)
  string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," content "${content}")
  string(APPEND body "static const char sql_${count}[] = {${content}0x00};\n")
  string(APPEND names "    {\"${name}\", sql_${count}},\n")
  math(EXPR count "${count}+1")
endforeach()
string(APPEND body "struct gt_schema_file { const char *name; const char *sql; };\n")
string(APPEND body "const struct gt_schema_file gt_schema_files[] = {\n${names}    {NULL, NULL}\n};\n")
file(WRITE ${OUT}.tmp "${body}")
file(COPY_FILE ${OUT}.tmp ${OUT} ONLY_IF_DIFFERENT)
