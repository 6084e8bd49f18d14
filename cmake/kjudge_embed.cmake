# kj_embed_text(<target> <symbol> <file>): compiles <file> into <target> as a string constant
# `extern const std::string_view <symbol>` in namespace kj::embedded, so documents and scripts that
# ship inside the binary (help text, the Python harness) cannot drift from their sources.
function(kj_embed_text target symbol file)
  get_filename_component(_abs "${file}" ABSOLUTE)
  set(_out "${CMAKE_CURRENT_BINARY_DIR}/embedded_${symbol}.cpp")
  add_custom_command(
    OUTPUT "${_out}"
    COMMAND ${CMAKE_COMMAND} -DIN=${_abs} -DOUT=${_out} -DSYMBOL=${symbol}
            -P "${PROJECT_SOURCE_DIR}/cmake/kjudge_embed_gen.cmake"
    DEPENDS "${_abs}" "${PROJECT_SOURCE_DIR}/cmake/kjudge_embed_gen.cmake"
    COMMENT "Embedding ${file}")
  target_sources(${target} PRIVATE "${_out}")
endfunction()
