# Node agent cost per window (docs/telemetry.md has the numbers and the command).
if(TARGET neighborly_agent_host AND TARGET neighborly_agent_resctrl_fake)
  add_executable(agent_window_bench ${CMAKE_CURRENT_LIST_DIR}/agent_window_bench.cc)
  target_link_libraries(agent_window_bench PRIVATE neighborly_agent_host
    neighborly_agent_resctrl_fake neighborly_agent_perf neighborly_agent_sys
    absl::str_format neighborly_warnings)
endif()
