# The layer graph of src/layers.txt, read once: HPCPLANE_LAYER_DEPS_<layer> lists what a layer
# may link (a '/' in a layer's name becomes '_'). hpcplane_layer() refuses any other link at
# configure time, so the build enforces the same graph as scripts/check-layers.sh.
file(STRINGS ${CMAKE_SOURCE_DIR}/src/layers.txt hpcplane_layer_lines REGEX "^[a-z/_]+:")
foreach(line IN LISTS hpcplane_layer_lines)
  string(REGEX MATCH "^([a-z/_]+):(.*)$" unused "${line}")
  string(REPLACE "/" "_" key "${CMAKE_MATCH_1}")
  string(STRIP "${CMAKE_MATCH_2}" deps)
  separate_arguments(deps)
  set(HPCPLANE_LAYER_DEPS_${key} ${deps})
endforeach()

# hpcplane_layer(<layer> SOURCES <files> LAYERS <layers it links> [LIBRARIES <public third-party>]
#                [PRIVATE_LIBRARIES <private third-party>]): the static library hpcplane_<layer>.
function(hpcplane_layer layer)
  cmake_parse_arguments(PARSE_ARGV 1 L "" "" "SOURCES;LAYERS;LIBRARIES;PRIVATE_LIBRARIES")
  string(REPLACE "/" "_" key "${layer}")
  set(links "")
  foreach(dep IN LISTS L_LAYERS)
    if(NOT dep IN_LIST HPCPLANE_LAYER_DEPS_${key})
      message(FATAL_ERROR "src/${layer} links ${dep}, which src/layers.txt does not allow "
                          "(${layer} may link: ${HPCPLANE_LAYER_DEPS_${key}})")
    endif()
    string(REPLACE "/" "_" dep_key "${dep}")
    list(APPEND links hpcplane_${dep_key})
  endforeach()
  add_library(hpcplane_${key} STATIC ${L_SOURCES})
  target_link_libraries(hpcplane_${key} PUBLIC ${links} ${L_LIBRARIES} PRIVATE ${L_PRIVATE_LIBRARIES})
endfunction()
