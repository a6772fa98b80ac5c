// Parsing of resource amounts written by people.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/quantity.h"

namespace ty {

// "16Gi", "512Mi", "1G", "1000000" -> bytes; nullopt when malformed.
std::optional<std::int64_t> parseMemory(const std::string& text);
// 17179869184 -> "16Gi".
std::string formatMemory(std::int64_t bytes);
// "2", "0.5", "250m" -> Quantity; nullopt when malformed or over 3 decimals.
std::optional<Quantity> parseQuantity(const std::string& text);

}  // namespace ty
