# The neighborly-agent binary. Host measurement (node-agent/src/host) is linked
# when its library exists; until then host mode exits 2 with one line.
add_executable(neighborly-agent ${CMAKE_CURRENT_SOURCE_DIR}/main.cc)
set_target_properties(neighborly-agent PROPERTIES OUTPUT_NAME neighborly-agent)
target_link_libraries(neighborly-agent PRIVATE
  neighborly_agent_simulate neighborly_agent_report neighborly_common
  absl::strings absl::synchronization absl::time PkgConfig::HTTPLIB spdlog::spdlog
  Threads::Threads neighborly_warnings)
if(TARGET neighborly_agent_host)
  target_link_libraries(neighborly-agent PRIVATE neighborly_agent_host)
  target_compile_definitions(neighborly-agent PRIVATE NEIGHBORLY_AGENT_WITH_HOST=1)
endif()

# Command-line behaviour of the built binary (flags, exit codes, --once JSON).
neighborly_add_test(agent_cli_test
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/main_test.cc
  LIBS neighborly_test_support nlohmann_json::nlohmann_json neighborly_proto absl::strings)
add_dependencies(agent_cli_test neighborly-agent)
