# The placement fleet benchmark (make bench-placement, docs/placement-benchmark.md):
# a discrete-event fleet simulator with its own interference ground truth,
# kube-scheduler's default scoring alone and combined with the real extender
# (through its HTTP handler, in memory) fed by the real agent simulator's reports.
if(TARGET neighborly_http AND TARGET neighborly_core AND TARGET neighborly_agent_simulate
   AND TARGET neighborly_extender_config)
  # The model parts, without the extender: ground truth, default scoring, kubelet.
  add_library(neighborly_fleet_model STATIC
    ${CMAKE_CURRENT_LIST_DIR}/fleet/ground_truth.cc
    ${CMAKE_CURRENT_LIST_DIR}/fleet/default_scheduler.cc
    ${CMAKE_CURRENT_LIST_DIR}/fleet/kubelet_cpus.cc
    ${CMAKE_CURRENT_LIST_DIR}/fleet/workload_mix.cc)
  target_include_directories(neighborly_fleet_model PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(neighborly_fleet_model PUBLIC absl::strings absl::str_format
    PRIVATE neighborly_warnings)

  # The simulator, on the real extender and agent simulator.
  add_library(neighborly_fleet_sim STATIC
    ${CMAKE_CURRENT_LIST_DIR}/fleet/agent_view.cc
    ${CMAKE_CURRENT_LIST_DIR}/fleet/calibration.cc
    ${CMAKE_CURRENT_LIST_DIR}/fleet/fleet_sim.cc)
  target_include_directories(neighborly_fleet_sim PUBLIC ${PROJECT_SOURCE_DIR})
  target_link_libraries(neighborly_fleet_sim PUBLIC neighborly_fleet_model
    PRIVATE neighborly_http neighborly_core neighborly_extender_config neighborly_agent_simulate
      nlohmann_json::nlohmann_json absl::time neighborly_warnings)

  add_executable(placement_bench ${CMAKE_CURRENT_LIST_DIR}/placement_bench.cc)
  target_link_libraries(placement_bench PRIVATE neighborly_fleet_sim absl::strings
    absl::str_format neighborly_warnings)

  neighborly_add_test(placement_bench_test
    SOURCES ${CMAKE_CURRENT_LIST_DIR}/fleet/ground_truth_test.cc
      ${CMAKE_CURRENT_LIST_DIR}/fleet/default_scheduler_test.cc
      ${CMAKE_CURRENT_LIST_DIR}/fleet/kubelet_cpus_test.cc
      ${CMAKE_CURRENT_LIST_DIR}/fleet/fleet_sim_test.cc
      ${CMAKE_CURRENT_LIST_DIR}/fleet/calibration_test.cc
      ${CMAKE_CURRENT_LIST_DIR}/fleet/workload_mix_test.cc
    LIBS neighborly_fleet_sim neighborly_fleet_model)
  # One small fleet through the whole path (extender, agent simulator, ground
  # truth): the binary must run and print its table.
  add_test(NAME placement_bench_smoke
    COMMAND placement_bench --fleets 1 --arrivals 40 --seed 7)
  set_tests_properties(placement_bench_smoke PROPERTIES
    PASS_REGULAR_EXPRESSION "neighborly" TIMEOUT 120)
  # --calibrate: the per-kind table of the extender's predictions against the truth.
  add_test(NAME placement_bench_calibrate_smoke
    COMMAND placement_bench --fleets 1 --arrivals 60 --seed 7 --calibrate)
  set_tests_properties(placement_bench_calibrate_smoke PROPERTIES
    PASS_REGULAR_EXPRESSION "latency-critical +[1-9][0-9]* +-?[0-9]+[.][0-9]+ +-?[0-9]+[.][0-9]+"
    TIMEOUT 120)
endif()
