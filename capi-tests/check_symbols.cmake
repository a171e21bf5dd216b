# The `symbols` test: checks the C ABI surface of liblodtensor.so.
#
#   cmake -DLIBRARY=<path to liblodtensor.so> -DINCLUDE_DIR=<repo>/include [-DNM=nm]
#         -P check_symbols.cmake
#
# 1. Every exported symbol starts with one of the documented prefixes below. This is the one
#    place the list lives; README.md mirrors it. Adding a prefix is an API decision: change both.
# 2. Every function (and extern object) declared in include/*.h is exported: a declaration with
#    no definition links in C but fails at load time for whoever calls it.
# 3. Every exported symbol is declared in include/*.h: an export missing from the header is an
#    undocumented entry point, usually a forgotten cbindgen regeneration.
cmake_minimum_required(VERSION 3.20) # policies for `cmake -P` (e.g. while(TRUE) means true)

set(LODTENSOR_SYMBOL_PREFIXES
  lodtensor_
  tensor_array_
  rank_table_
  sequence_
  beam_search_
)

foreach(var LIBRARY INCLUDE_DIR)
  if(NOT DEFINED ${var})
    message(FATAL_ERROR "check_symbols.cmake: -D${var}=... is required")
  endif()
endforeach()
if(NOT NM)
  find_program(NM nm)
  if(NOT NM)
    message(FATAL_ERROR "check_symbols.cmake: nm not found (Debian: apt-get install -y binutils)")
  endif()
endif()
if(NOT EXISTS "${LIBRARY}")
  message(FATAL_ERROR "check_symbols.cmake: ${LIBRARY} does not exist (build first)")
endif()

# --- exported symbols ------------------------------------------------------------------------
execute_process(COMMAND "${NM}" -D --defined-only "${LIBRARY}"
  OUTPUT_VARIABLE nm_out ERROR_VARIABLE nm_err RESULT_VARIABLE nm_rc)
if(NOT nm_rc EQUAL 0)
  message(FATAL_ERROR "check_symbols.cmake: nm failed (${nm_rc}): ${nm_err}")
endif()
string(REPLACE "\n" ";" nm_lines "${nm_out}")
set(exported "")
foreach(line IN LISTS nm_lines)
  # "<address> <type> <name>[@version]". Type A marks symbol-version nodes, not symbols.
  if(line MATCHES "^[0-9a-fA-F]* *([A-Za-z]) ([^@ ]+)")
    if(NOT CMAKE_MATCH_1 STREQUAL "A")
      list(APPEND exported "${CMAKE_MATCH_2}")
    endif()
  endif()
endforeach()
list(REMOVE_DUPLICATES exported)
list(SORT exported)
list(LENGTH exported n_exported)
if(n_exported EQUAL 0)
  # Also guards this script: an nm output format it fails to parse must not pass silently.
  message(FATAL_ERROR "check_symbols.cmake: ${LIBRARY} exports no symbols at all")
endif()

# --- declared functions and objects ----------------------------------------------------------
# The headers are cbindgen output: doc comments, #if/#define lines, typedefs, and one
# declaration per function, its name directly followed by '(' (parameters may continue on the
# following lines). Comments and preprocessor lines are dropped first, so prose and macros
# that mention a function do not count as declarations.
file(GLOB headers "${INCLUDE_DIR}/*.h")
if(NOT headers)
  message(FATAL_ERROR "check_symbols.cmake: no headers in ${INCLUDE_DIR}")
endif()
set(declared "")
foreach(header IN LISTS headers)
  # Read by hand rather than with file(STRINGS): ';', '[', ']' and '\' are list syntax in
  # CMake and would split or merge lines, so they become placeholders first.
  file(READ "${header}" text)
  string(REPLACE "\\" "<BS>" text "${text}")
  string(REPLACE ";" "<SC>" text "${text}")
  string(REPLACE "[" "<LB>" text "${text}")
  string(REPLACE "]" "<RB>" text "${text}")
  string(REPLACE "\n" ";" lines "${text}")
  set(in_comment FALSE)
  set(in_macro FALSE)
  foreach(line IN LISTS lines)
    # Multi-line preprocessor directives end at a line without a trailing backslash.
    if(in_macro)
      if(NOT line MATCHES "<BS>[ \t\r]*$")
        set(in_macro FALSE)
      endif()
      continue()
    endif()
    if(in_comment)
      string(FIND "${line}" "*/" end)
      if(end LESS 0)
        continue()
      endif()
      math(EXPR end "${end} + 2")
      string(SUBSTRING "${line}" ${end} -1 line)
      set(in_comment FALSE)
    endif()
    if(line MATCHES "^[ \t]*#")
      if(line MATCHES "<BS>[ \t\r]*$")
        set(in_macro TRUE)
      endif()
      continue()
    endif()
    # Strip /* ... */ pieces on this line; an unterminated one opens a comment block.
    while(TRUE)
      string(FIND "${line}" "/*" start)
      if(start LESS 0)
        break()
      endif()
      string(SUBSTRING "${line}" 0 ${start} before)
      math(EXPR rest_at "${start} + 2")
      string(SUBSTRING "${line}" ${rest_at} -1 rest)
      string(FIND "${rest}" "*/" end)
      if(end LESS 0)
        set(line "${before}")
        set(in_comment TRUE)
        break()
      endif()
      math(EXPR end "${end} + 2")
      string(SUBSTRING "${rest}" ${end} -1 after)
      set(line "${before} ${after}")
    endwhile()
    string(REGEX REPLACE "//.*$" "" line "${line}")

    # Functions: an identifier immediately followed by '('. Function-pointer typedefs and
    # struct fields ("int32_t (*step)(void *)") never have that shape.
    string(REGEX MATCHALL "[A-Za-z_][A-Za-z0-9_]*\\(" calls "${line}")
    foreach(call IN LISTS calls)
      string(REGEX REPLACE "\\($" "" name "${call}")
      # Compiler attributes and keywords, not functions.
      if(name MATCHES "^__" OR name MATCHES "^(sizeof|alignof|_Alignas|_Static_assert|defined)$")
        continue()
      endif()
      list(APPEND declared "${name}")
    endforeach()
    # Objects: cbindgen writes a `pub static` as "extern const T name;" (or "name[N];").
    if(line MATCHES "^[ \t]*extern[ \t][^(]*[ \t*]([A-Za-z_][A-Za-z0-9_]*)[ \t]*(<LB>[^<]*<RB>)?[ \t]*<SC>")
      list(APPEND declared "${CMAKE_MATCH_1}")
    endif()
  endforeach()
endforeach()
list(REMOVE_DUPLICATES declared)
list(SORT declared)

# --- checks ----------------------------------------------------------------------------------
string(REPLACE ";" "|" prefix_alternatives "${LODTENSOR_SYMBOL_PREFIXES}")
list(JOIN LODTENSOR_SYMBOL_PREFIXES ", " prefix_text)
set(bad_prefix "")
foreach(sym IN LISTS exported)
  if(NOT sym MATCHES "^(${prefix_alternatives})")
    list(APPEND bad_prefix "${sym}")
  endif()
endforeach()
set(not_exported ${declared})
list(REMOVE_ITEM not_exported ${exported})
set(not_declared ${exported})
if(declared)
  list(REMOVE_ITEM not_declared ${declared})
endif()

set(failed FALSE)
if(bad_prefix)
  list(JOIN bad_prefix "\n  " txt)
  message(SEND_ERROR "Exported symbols without a documented prefix "
                     "(${prefix_text}):\n  ${txt}")
  set(failed TRUE)
endif()
if(not_exported)
  list(JOIN not_exported "\n  " txt)
  message(SEND_ERROR "Declared in ${INCLUDE_DIR}/*.h but not exported by the library:\n  ${txt}")
  set(failed TRUE)
endif()
if(not_declared)
  list(JOIN not_declared "\n  " txt)
  message(SEND_ERROR "Exported by the library but not declared in ${INCLUDE_DIR}/*.h "
                     "(regenerate the header?):\n  ${txt}")
  set(failed TRUE)
endif()
if(failed)
  message(FATAL_ERROR "symbols: check failed for ${LIBRARY}")
endif()
list(LENGTH declared n_declared)
message(STATUS "symbols: ${n_exported} exported, ${n_declared} declared, all prefixed with one "
               "of: ${prefix_text}")
