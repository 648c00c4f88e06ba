# Helpers every tests/<module>/CMakeLists.txt uses.
#
# tp_add_test(NAME n SOURCES a.c ... [LIBS l ...] [LABELS l ...] [TIMEOUT s])
#   One C test executable = one ctest entry. It links the static library (so
#   internal symbols are reachable) and sees src/ and tests/ on its include path.
# tp_add_py_test(NAME n SCRIPT f.py [ARGS ...] [LABELS ...] [TIMEOUT s])
#   Runs python3 on a script that checks real binaries with independent parsers.
#   Environment: TRAINPROF_BIN (the CLI), TP_BUILD_DIR, TP_SOURCE_DIR,
#   TP_FIXTURES (../shared/fixtures when present), TP_EXAMPLES_DIR.
find_package(Python3 COMPONENTS Interpreter)
set(TP_SHARED_FIXTURES "${CMAKE_SOURCE_DIR}/../shared/fixtures")

function(tp_add_test)
  cmake_parse_arguments(T "" "NAME;TIMEOUT" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${T_NAME} ${T_SOURCES})
  target_include_directories(${T_NAME} PRIVATE ${CMAKE_SOURCE_DIR}/src ${CMAKE_SOURCE_DIR}/tests)
  target_compile_definitions(${T_NAME} PRIVATE ${TP_FEATURE_DEFS} _GNU_SOURCE
    TP_SOURCE_DIR="${CMAKE_SOURCE_DIR}" TP_FIXTURES="${TP_SHARED_FIXTURES}")
  target_link_libraries(${T_NAME} PRIVATE ${T_LIBS} trainprof_static ${TP_FEATURE_LIBS} ${CMAKE_DL_LIBS} m)
  add_test(NAME ${T_NAME} COMMAND ${T_NAME})
  _tp_test_props(${T_NAME} "${T_LABELS}" "${T_TIMEOUT}")
endfunction()

function(tp_add_py_test)
  cmake_parse_arguments(T "" "NAME;SCRIPT;TIMEOUT" "ARGS;LABELS" ${ARGN})
  add_test(NAME ${T_NAME}
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/${T_SCRIPT} ${T_ARGS})
  _tp_test_props(${T_NAME} "${T_LABELS}" "${T_TIMEOUT}")
endfunction()

function(_tp_test_props name labels timeout)
  if(NOT timeout)
    set(timeout 300)
  endif()
  set_tests_properties(${name} PROPERTIES TIMEOUT ${timeout} LABELS "${labels}"
    ENVIRONMENT "TRAINPROF_BIN=$<TARGET_FILE:trainprof>;TP_BUILD_DIR=${CMAKE_BINARY_DIR};TP_SOURCE_DIR=${CMAKE_SOURCE_DIR};TP_FIXTURES=${TP_SHARED_FIXTURES};TP_EXAMPLES_DIR=${CMAKE_BINARY_DIR}/examples;TP_SANITIZE=${TP_SANITIZE}")
endfunction()
