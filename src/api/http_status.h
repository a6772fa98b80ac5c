// The one mapping from Status codes to HTTP statuses, and the JSON error
// response every route writes.
#pragma once

#include <httplib.h>

#include "common/status.h"

namespace ty {

int httpStatus(StatusCode code);
// Sets the status and the body {"error":{"code","message","field"}}.
void writeError(httplib::Response& res, const Status& status);

}  // namespace ty
