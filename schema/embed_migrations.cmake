# Writes a C++ source holding every migration of one set as a raw string, numbered by its file name prefix.
# FUNCTION names the accessor (embeddedMigrations for schema/migrations/, embeddedTeamMigrations for schema/team/).
# The number is the schema version the script brings a database to, so the numbers must run 1, 2, 3, ... with no
# number twice (two NNNN_*.sql from branches merged would both be applied) and none missing; anything else stops the
# build here, naming the files.
string(REPLACE "|" ";" FILES "${FILES}")
set(count 0)
foreach(f ${FILES})
  get_filename_component(name ${f} NAME_WE)
  string(REGEX MATCH "^[0-9]+" num "${name}")
  if(num STREQUAL "")
    message(FATAL_ERROR "migration ${f} does not start with its number: name it NNNN_name.sql")
  endif()
  math(EXPR num "${num}")
  if(DEFINED file_of_${num})
    message(FATAL_ERROR "migrations ${file_of_${num}} and ${f} both have number ${num}: renumber the one that "
                        "came later to the next free number")
  endif()
  set(file_of_${num} ${f})
  math(EXPR count "${count} + 1")
endforeach()

set(body "// Generated from ${SOURCE} by schema/embed_migrations.cmake. Do not edit.\n")
string(APPEND body "#include \"embedded_migrations.h\"\n\nnamespace memq {\n\nconst std::vector<Migration>& ${FUNCTION}() {\n")
string(APPEND body "  static const std::vector<Migration> kMigrations = {\n")
# In the order of their numbers, which the runner applies them in (whatever the file names sort as).
if(count GREATER 0)
  foreach(num RANGE 1 ${count})
    if(NOT DEFINED file_of_${num})
      message(FATAL_ERROR "${SOURCE}: ${count} migrations, but none has number ${num}: the numbers must run from 1 "
                          "with no gap")
    endif()
    set(f ${file_of_${num}})
    get_filename_component(name ${f} NAME_WE)
    file(READ ${f} sql)
    string(APPEND body "    {${num}, \"${name}\", R\"memqsql(${sql})memqsql\"},\n")
  endforeach()
endif()
string(APPEND body "  };\n  return kMigrations;\n}\n\n}  // namespace memq\n")
file(WRITE ${OUT} "${body}")
