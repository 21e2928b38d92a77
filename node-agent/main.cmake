# The neighborly-agent binary: host measurement (node-agent/src/host) and the
# simulated fleet (node-agent/src/simulate) behind one command line.
add_executable(neighborly-agent ${CMAKE_CURRENT_SOURCE_DIR}/main.cc)
set_target_properties(neighborly-agent PROPERTIES OUTPUT_NAME neighborly-agent)
target_link_libraries(neighborly-agent PRIVATE
  neighborly_agent_host neighborly_agent_simulate neighborly_agent_report neighborly_agent_sys
  neighborly_common
  absl::strings absl::synchronization absl::time PkgConfig::HTTPLIB spdlog::spdlog
  Threads::Threads nlohmann_json::nlohmann_json neighborly_warnings)

# Command-line behaviour of the built binary (flags, exit codes, --once JSON).
neighborly_add_test(agent_cli_test
  SOURCES ${CMAKE_CURRENT_SOURCE_DIR}/main_test.cc
  LIBS neighborly_test_support nlohmann_json::nlohmann_json neighborly_proto absl::strings)
add_dependencies(agent_cli_test neighborly-agent)
