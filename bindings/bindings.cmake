# The C++, Go and Java bindings' tests, included from capi-tests/CMakeLists.txt. All carry the
# label `bindings` (ctest -L bindings) and use the INSTALLED library: the fixture test
# `bindings.install` runs `cmake --install` of the library into a scratch prefix first.
#
#   bindings.install      cmake --install into build/.../bindings/prefix (fixture setup)
#   bindings.cpp          capi-tests/test_hpp_*.cpp built against the installed lodtensor.hpp
#   bindings.go           gofmt, go vet and go test of bindings/go (cgo, pkg-config)
#   bindings.java         the JUnit 5 tests of bindings/java (JNA)
#   bindings.readme.cpp   README.md's C++, Go and Java snippets, compiled and run as they are;
#   bindings.readme.go    the C++ one by a CMake project with find_package(lodtensor) (shared and
#   bindings.readme.java  static) and with pkg-config
#
# The test_hpp_* programs also run from the build tree (and under valgrind) through the
# capi-tests glob; they get the `bindings` label too.
#
# Needs Go (>= 1.19, cgo), a JDK 17+, JNA (Debian: libjna-java) and the JUnit 5 console launcher
# (Debian: junit5); scripts/test.sh installs them. -DLODTENSOR_BINDINGS=OFF leaves all of this out.
option(LODTENSOR_BINDINGS "Test the C++, Go and Java bindings (needs go, a JDK, JNA and JUnit 5)" ON)
if(NOT LODTENSOR_BINDINGS)
  return()
endif()

set(_lt_bind_src "${CMAKE_CURRENT_LIST_DIR}")
set(_lt_root "${CMAKE_CURRENT_LIST_DIR}/..")
set(_lt_work "${CMAKE_CURRENT_BINARY_DIR}/bindings")
set(_lt_hint "Install them (Debian: apt-get install -y golang-go openjdk-17-jdk-headless libjna-java junit5, "
             "or run scripts/test.sh, which does) or configure with -DLODTENSOR_BINDINGS=OFF.")

find_program(LODTENSOR_GO go HINTS /usr/lib/go/bin DOC "the go command, for the Go binding's tests")
if(NOT LODTENSOR_GO)
  message(FATAL_ERROR "bindings: go not found. ${_lt_hint}")
endif()
find_package(Java 17 COMPONENTS Development Runtime)
if(NOT Java_FOUND)
  message(FATAL_ERROR "bindings: no JDK 17+ found. ${_lt_hint}")
endif()
include(UseJava)
find_jar(LODTENSOR_JNA_JAR NAMES jna PATHS /usr/share/java)
find_jar(LODTENSOR_JUNIT_API_JAR NAMES junit-jupiter-api PATHS /usr/share/java)
find_jar(LODTENSOR_JUNIT_CONSOLE_JAR NAMES junit-platform-console-standalone PATHS /usr/share/java)
find_jar(LODTENSOR_APIGUARDIAN_JAR NAMES apiguardian-api PATHS /usr/share/java)
find_jar(LODTENSOR_OPENTEST4J_JAR NAMES opentest4j PATHS /usr/share/java)
find_jar(LODTENSOR_JUNIT_COMMONS_JAR NAMES junit-platform-commons PATHS /usr/share/java)
foreach(jar JNA JUNIT_API JUNIT_CONSOLE APIGUARDIAN OPENTEST4J JUNIT_COMMONS)
  if(NOT LODTENSOR_${jar}_JAR)
    message(FATAL_ERROR "bindings: LODTENSOR_${jar}_JAR not found. ${_lt_hint}")
  endif()
endforeach()

# ---- the Java binding and its tests, compiled at build time -----------------------------------
set(CMAKE_JAVA_COMPILE_FLAGS --release 17 -Xlint:all -Werror -encoding UTF-8)
file(GLOB_RECURSE _lt_java_main CONFIGURE_DEPENDS "${_lt_bind_src}/java/src/main/java/*.java")
file(GLOB_RECURSE _lt_java_test CONFIGURE_DEPENDS "${_lt_bind_src}/java/src/test/java/*.java")
add_jar(lodtensor_java SOURCES ${_lt_java_main} INCLUDE_JARS "${LODTENSOR_JNA_JAR}" OUTPUT_NAME lodtensor)
add_jar(lodtensor_java_tests SOURCES ${_lt_java_test}
        INCLUDE_JARS lodtensor_java "${LODTENSOR_JNA_JAR}" "${LODTENSOR_JUNIT_API_JAR}"
                     "${LODTENSOR_APIGUARDIAN_JAR}" "${LODTENSOR_OPENTEST4J_JAR}" "${LODTENSOR_JUNIT_COMMONS_JAR}"
        OUTPUT_NAME lodtensor-tests)
get_target_property(_lt_java_main_jar lodtensor_java JAR_FILE)
get_target_property(_lt_java_test_jar lodtensor_java_tests JAR_FILE)

# ---- README snippets ----------------------------------------------------------------------------
# The first ```<lang> block of README.md, written to <file> (re-extracted when README.md changes:
# capi-tests/CMakeLists.txt makes README.md a configure dependency).
function(lodtensor_readme_block lang file)
  file(READ "${_lt_root}/README.md" text)
  string(FIND "${text}" "```${lang}\n" begin)
  if(begin EQUAL -1)
    message(FATAL_ERROR "bindings: README.md has no ```${lang} block")
  endif()
  string(LENGTH "```${lang}\n" fence)
  math(EXPR begin "${begin} + ${fence}")
  string(SUBSTRING "${text}" ${begin} -1 text)
  string(FIND "${text}" "```" end)
  string(SUBSTRING "${text}" 0 ${end} text)
  file(CONFIGURE OUTPUT "${file}" CONTENT "${text}" @ONLY)
endfunction()
lodtensor_readme_block(cpp "${_lt_work}/readme/readme.cpp")
lodtensor_readme_block(go "${_lt_work}/readme/main.go")
lodtensor_readme_block(java "${_lt_work}/readme/Example.java")

# ---- tests ---------------------------------------------------------------------------------------
set(_lt_env
  "SRC=${_lt_root}"
  "PREFIX=${_lt_work}/prefix"
  "WORK=${_lt_work}"
  "BUILD=${CMAKE_CURRENT_BINARY_DIR}/lodtensor"
  "LIBDIR_REL=${CMAKE_INSTALL_LIBDIR}"
  "CMAKE=${CMAKE_COMMAND}"
  "CXX=${CMAKE_CXX_COMPILER}"
  "GO=${LODTENSOR_GO}"
  "JAVA=${Java_JAVA_EXECUTABLE}"
  "JNA_JAR=${LODTENSOR_JNA_JAR}"
  "JUNIT_JAR=${LODTENSOR_JUNIT_CONSOLE_JAR}"
  "JAVA_MAIN_JAR=${_lt_java_main_jar}"
  "JAVA_TEST_JAR=${_lt_java_test_jar}"
  # What each README snippet prints (run_test.sh compares it exactly).
  "EXPECT=sentence lengths 2 3 2, rnn output 1 3 3 7 12 6 13")

function(lodtensor_binding_test name)
  add_test(NAME ${name} COMMAND bash "${_lt_bind_src}/run_test.sh" ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS "bindings" ENVIRONMENT "${_lt_env}"
                       FIXTURES_REQUIRED lodtensor_installed)
endfunction()

add_test(NAME bindings.install COMMAND bash "${_lt_bind_src}/run_test.sh" install)
set_tests_properties(bindings.install PROPERTIES LABELS "bindings;packaging" ENVIRONMENT "${_lt_env}"
                     FIXTURES_SETUP lodtensor_installed)

lodtensor_binding_test(bindings.cpp cpp)
lodtensor_binding_test(bindings.go go)
lodtensor_binding_test(bindings.java java)
lodtensor_binding_test(bindings.readme.cpp cpp-readme "${_lt_work}/readme/readme.cpp")
lodtensor_binding_test(bindings.readme.go go-readme "${_lt_work}/readme/main.go")
lodtensor_binding_test(bindings.readme.java java-readme "${_lt_work}/readme/Example.java")

# The build-tree runs of the C++ tests (capi-tests glob) belong to the bindings too.
foreach(source IN LISTS _lodtensor_test_sources)
  get_filename_component(name "${source}" NAME_WE)
  if(name MATCHES "^test_hpp_")
    set_property(TEST ${name} APPEND PROPERTY LABELS bindings)
  endif()
endforeach()
