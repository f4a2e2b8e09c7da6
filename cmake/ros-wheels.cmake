# Lets a ROS 2 package build against the ROS 2 wheels from PyPI installed in a Python prefix (a
# venv): included by our CMakeLists, and injected into upstream packages with
# -DCMAKE_PROJECT_INCLUDE=<this file> by scripts/install-ros-src.sh. On a normal ROS 2 install it
# adds a prefix that is already searched and filters nothing.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
# The prefixes of Python's site-packages folders: the venv's, and under pip's build isolation the
# one its build requirements went to.
execute_process(
  COMMAND "${Python3_EXECUTABLE}" -c
    "import pathlib, sys; print(';'.join(dict.fromkeys([sys.prefix] + [str(pathlib.Path(p).parents[2]) for p in sys.path if p.endswith('site-packages')])))"
  OUTPUT_VARIABLE ROS_WHEELS_PREFIXES OUTPUT_STRIP_TRAILING_WHITESPACE)
# The ament index and the CMake configs of the wheels live in those prefixes.
foreach(_prefix IN LISTS ROS_WHEELS_PREFIXES)
  list(APPEND CMAKE_PREFIX_PATH "${_prefix}")
  set(ENV{AMENT_PREFIX_PATH} "${_prefix}:$ENV{AMENT_PREFIX_PATH}")
endforeach()

# The wheels' exported targets carry include paths of the machine that built them; CMake's generate
# step fails on a path that does not exist here. Filtered once every find_package has run.
function(ros_wheels_drop_foreign_includes)
  get_property(_targets DIRECTORY "${CMAKE_SOURCE_DIR}" PROPERTY IMPORTED_TARGETS)
  foreach(_target IN LISTS _targets)
    get_target_property(_includes ${_target} INTERFACE_INCLUDE_DIRECTORIES)
    if(_includes)
      list(FILTER _includes EXCLUDE REGEX "^/opt/python/")
      set_target_properties(${_target} PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_includes}")
    endif()
  endforeach()
endfunction()
cmake_language(DEFER DIRECTORY "${CMAKE_SOURCE_DIR}" CALL ros_wheels_drop_foreign_includes)
