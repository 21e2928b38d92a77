# The neighborly-extender binary: wiring of config, core, ingest, HTTP and API.
add_executable(neighborly-extender ${CMAKE_CURRENT_LIST_DIR}/main.cc)
set_target_properties(neighborly-extender PROPERTIES OUTPUT_NAME neighborly-extender)
target_link_libraries(neighborly-extender PRIVATE
  neighborly_core neighborly_ingest neighborly_placement neighborly_http neighborly_api
  neighborly_extender_config
  neighborly_common absl::strings absl::synchronization spdlog::spdlog neighborly_malloc
  neighborly_warnings)

neighborly_add_test(extender_main_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/main_test.cc
  LIBS neighborly_test_support neighborly_test_pki neighborly_common nlohmann_json::nlohmann_json PkgConfig::HTTPLIB
       absl::strings)
add_dependencies(extender_main_test neighborly-extender)
target_compile_definitions(extender_main_test PRIVATE
  NEIGHBORLY_EXTENDER_BINARY="$<TARGET_FILE:neighborly-extender>")

neighborly_add_test(extender_operator_port_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/operator_port_test.cc
  LIBS neighborly_test_support neighborly_test_pki PkgConfig::HTTPLIB absl::strings)
add_dependencies(extender_operator_port_test neighborly-extender neighborlyctl)
target_compile_definitions(extender_operator_port_test PRIVATE
  NEIGHBORLY_EXTENDER_BINARY="$<TARGET_FILE:neighborly-extender>"
  NEIGHBORLY_CTL_BINARY="$<TARGET_FILE:neighborlyctl>")

neighborly_add_test(extender_placement_port_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/placement_port_test.cc
  LIBS neighborly_test_support neighborly_test_pki neighborly_placement_proto PkgConfig::HTTPLIB
       nlohmann_json::nlohmann_json absl::strings)
add_dependencies(extender_placement_port_test neighborly-extender neighborly-agent)
target_compile_definitions(extender_placement_port_test PRIVATE
  NEIGHBORLY_EXTENDER_BINARY="$<TARGET_FILE:neighborly-extender>")

# The memory bound through the binary's HTTP port (docs/performance.md, "Memory bound").
neighborly_add_test(extender_memory_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/memory_test.cc
  LIBS neighborly_test_support neighborly_proto neighborly_common absl::strings absl::time)
add_dependencies(extender_memory_test neighborly-extender)
target_compile_definitions(extender_memory_test PRIVATE
  NEIGHBORLY_EXTENDER_BINARY="$<TARGET_FILE:neighborly-extender>")

# Roles per port through the binary with the chart's TLS layout (docs/security.md, "Roles").
neighborly_add_test(extender_roles_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/roles_test.cc
  LIBS neighborly_test_support neighborly_test_pki neighborly_placement_proto neighborly_proto
       PkgConfig::HTTPLIB absl::strings)
add_dependencies(extender_roles_test neighborly-extender)
target_compile_definitions(extender_roles_test PRIVATE
  NEIGHBORLY_EXTENDER_BINARY="$<TARGET_FILE:neighborly-extender>")

# Reports bounded before they cost, through the binary's telemetry port (docs/security.md, "Limits").
neighborly_add_test(extender_report_flood_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/report_flood_test.cc
  LIBS neighborly_test_support neighborly_test_pki neighborly_proto neighborly_common
       OpenSSL::Crypto nlohmann_json::nlohmann_json absl::strings absl::time
  # Floods that take both cores for a while: alone, so that they neither starve
  # the tests beside them (20 s deadlines, handshakes) nor are starved.
  PROPERTIES RUN_SERIAL TRUE)
add_dependencies(extender_report_flood_test neighborly-extender)
target_compile_definitions(extender_report_flood_test PRIVATE
  NEIGHBORLY_EXTENDER_BINARY="$<TARGET_FILE:neighborly-extender>")

# Bookings bounded, through the binary's scheduler and placement ports (docs/security.md, "Limits").
neighborly_add_test(extender_booking_flood_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/booking_flood_test.cc
  LIBS neighborly_test_support neighborly_placement_proto neighborly_proto neighborly_common
       PkgConfig::HTTPLIB absl::strings absl::time
  PROPERTIES RUN_SERIAL TRUE)
add_dependencies(extender_booking_flood_test neighborly-extender)
target_compile_definitions(extender_booking_flood_test PRIVATE
  NEIGHBORLY_EXTENDER_BINARY="$<TARGET_FILE:neighborly-extender>")

# Issue 24's smaller findings through the binary: a pending pod's claim, the state file's
# temporary, the failed start's message, Host and the request target.
neighborly_add_test(extender_hostile_inputs_test
  SOURCES ${CMAKE_CURRENT_LIST_DIR}/hostile_inputs_test.cc
  LIBS neighborly_test_support neighborly_proto nlohmann_json::nlohmann_json absl::strings
       absl::time)
add_dependencies(extender_hostile_inputs_test neighborly-extender)
target_compile_definitions(extender_hostile_inputs_test PRIVATE
  NEIGHBORLY_EXTENDER_BINARY="$<TARGET_FILE:neighborly-extender>")
target_compile_options(extender_hostile_inputs_test PRIVATE -Wno-missing-field-initializers)
