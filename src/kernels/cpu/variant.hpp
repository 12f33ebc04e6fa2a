// The CPU kernels are compiled twice on x86-64: once for any x86-64 CPU
// (namespace spt::kernels::cpu) and once more for x86-64-v3 (AVX2, FMA,
// BMI2: every x86-64 server CPU since 2013-2015), into namespace
// spt::kernels::cpu_x86_64_v3, the build defining SPT_CPU_VARIANT_X86_64_V3 (CMake,
// sptensor_kernels_x86_64_v3). The dispatcher runs the second where the CPU has
// those instructions (dispatch.hpp, Exec::cpu_isa), so a portable build runs
// the kernels as fast as one compiled with -march=native.
//
// Every kernels/cpu source opens its namespace as
//
//   SPT_CPU_VARIANT_TARGET
//   namespace spt::kernels::SPT_CPU_VARIANT {
//
// after all of its includes. The target applies to the code that follows
// only: headers included before it (the standard library, core, the kernel
// lists) are compiled for any x86-64 in both copies, so an inline function
// or template instance that both copies emit under one name is the same
// code in both, whichever the linker keeps. The kernels' own shared header
// (mttkrp_parallel.hpp), whose names are in the copy's namespace, wraps
// that namespace in SPT_CPU_VARIANT_HEADER_BEGIN / _END instead, so its
// helpers are compiled for the copy too and its lambdas can be inlined. The ISA is
// given as features, not as an arch, so that such functions can still be
// inlined into the AVX2 code (GCC inlines only between equal arches).
// scripts/check_cpu_variant.py checks the built objects for it. GCC only
// (cmake/sptensor_layers.cmake): Clang ignores this pragma, and its own
// (`#pragma clang attribute`) is not known to reach the functions OpenMP
// outlines, where the loops are; a Clang build has the baseline copy only.
#pragma once

// SPT_CPU_VECTOR_BYTES is the SIMD register width of the copy being
// compiled. The compiler's own __AVX__ macros cannot tell: the pragma does
// not change them in C++ (the whole file is read before it takes effect).
#if defined(SPT_CPU_VARIANT_X86_64_V3)
#define SPT_CPU_VARIANT cpu_x86_64_v3
#define SPT_CPU_VARIANT_TARGET _Pragma("GCC target(\"avx2,fma,bmi,bmi2,popcnt\")")
#define SPT_CPU_VARIANT_HEADER_BEGIN _Pragma("GCC push_options") SPT_CPU_VARIANT_TARGET
#define SPT_CPU_VARIANT_HEADER_END _Pragma("GCC pop_options")
#define SPT_CPU_VECTOR_BYTES 32
#else
#define SPT_CPU_VARIANT cpu
#define SPT_CPU_VARIANT_TARGET
#define SPT_CPU_VARIANT_HEADER_BEGIN
#define SPT_CPU_VARIANT_HEADER_END
#if defined(__AVX512F__)
#define SPT_CPU_VECTOR_BYTES 64
#elif defined(__AVX__)
#define SPT_CPU_VECTOR_BYTES 32
#else
#define SPT_CPU_VECTOR_BYTES 16
#endif
#endif
