#pragma once
/** @file The elements of a strided tensor gathered into contiguous memory. */

#include <cstddef>
#include <cstdint>
#include <span>

namespace kj {

/** Copies the elements of the tensor at `from` (its first element), of `sizes` and `strides`
 *  (in elements, none negative: torch's), into `to` in row-major order, `element` bytes each:
 *  numel(sizes) * element bytes written, and only the elements read (a view that picks 8 floats
 *  128 MiB apart reads 32 bytes, not the span between them). Dimensions of size 1 are skipped and
 *  dimensions laid out one after the other are merged, so a contiguous tensor is one memcpy and
 *  every innermost run of stride 1 is one. Nothing is read or written where a size is 0.
 *  `sizes` and `strides` have the same length (0: a single element). */
void gather_strided(const std::byte* from, std::span<const std::int64_t> sizes,
                    std::span<const std::int64_t> strides, std::size_t element, std::byte* to);

/** The elements from a tensor's first element to the farthest its `sizes` and `strides` (in
 *  elements, none negative) reach: 1 + sum of (size - 1) * stride; 0 where a size is 0. At least
 *  the tensor's element count when no two of its indices share an element (a contiguous or
 *  sliced tensor), fewer for an expansion (stride 0) or another overlap. Saturates at SIZE_MAX.
 *  `sizes` and `strides` have the same length. */
[[nodiscard]] std::size_t strided_reach(std::span<const std::int64_t> sizes,
                                        std::span<const std::int64_t> strides) noexcept;

}  // namespace kj
