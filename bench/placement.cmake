# Placement service (gRPC, the scheduler plugin's calls) round trip benchmark.
if(TARGET neighborly_placement)
  add_executable(placement_roundtrip_bench ${CMAKE_CURRENT_LIST_DIR}/placement_roundtrip_bench.cc)
  target_link_libraries(placement_roundtrip_bench PRIVATE neighborly_placement neighborly_core
    absl::str_format neighborly_malloc neighborly_warnings)
  # The extender's CPU per booking on the streamed verdict path (issue 25): a
  # forked extender and this process as the plugin, over one Verdicts stream.
  add_executable(verdict_stream_bench ${CMAKE_CURRENT_LIST_DIR}/verdict_stream_bench.cc)
  target_link_libraries(verdict_stream_bench PRIVATE neighborly_placement neighborly_core
    absl::strings neighborly_malloc neighborly_warnings)
endif()
