// Kubernetes resource quantities ("500m", "2", "4Gi", "1.5G", "1e3").
//
//   ParseMilliQuantity("500m") == 500      // millicores
//   ParseByteQuantity("4Gi")  == 4294967296
#ifndef NEIGHBORLY_COMMON_QUANTITY_H_
#define NEIGHBORLY_COMMON_QUANTITY_H_

#include <cstdint>
#include <string_view>

#include "absl/status/statusor.h"

namespace neighborly {

// The quantity times 1000, rounded up (as Kubernetes' MilliValue does).
absl::StatusOr<int64_t> ParseMilliQuantity(std::string_view text);

// The quantity as an integer, rounded up (as Kubernetes' Value does).
absl::StatusOr<int64_t> ParseByteQuantity(std::string_view text);

}  // namespace neighborly

#endif  // NEIGHBORLY_COMMON_QUANTITY_H_
