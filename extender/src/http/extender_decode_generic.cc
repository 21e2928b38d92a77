// The On-Demand extraction pass for any CPU (simdjson's portable kernel).
#include <simdjson.h>

#include <algorithm>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "common/quantity.h"
#include "common/strings.h"
#include "extender/src/http/extender_decode.h"
#include "extender/src/model/pod_spec.h"

#define NEIGHBORLY_DECODE_NS decode_generic
#include "extender/src/http/extender_decode.inc"
