#pragma once
// GPU tests skip (never pass) where no CUDA device is usable: KJ_REQUIRE_GPU() at the top of a
// test body reports the probe's reason as the skip message.

#include <gtest/gtest.h>

#include <kjudge/cuda/probe.hpp>

#define KJ_REQUIRE_GPU()                                                    \
  do {                                                                      \
    const auto kj_probe = ::kj::cuda::probe();                              \
    if (!kj_probe.available) GTEST_SKIP() << "no GPU: " << kj_probe.reason; \
  } while (0)
