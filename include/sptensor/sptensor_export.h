/** \file
 * Symbol export macro for libsptensor. The library is built with
 * -fvisibility=hidden; only declarations marked SPT_API are exported. */
#ifndef SPTENSOR_EXPORT_H
#define SPTENSOR_EXPORT_H

#if defined(_WIN32)
#  if defined(SPT_BUILDING_LIBRARY)
#    define SPT_API __declspec(dllexport)
#  elif defined(SPT_STATIC)
#    define SPT_API
#  else
#    define SPT_API __declspec(dllimport)
#  endif
#elif defined(__GNUC__) || defined(__clang__)
#  define SPT_API __attribute__((visibility("default")))
#else
#  define SPT_API
#endif

#endif /* SPTENSOR_EXPORT_H */
