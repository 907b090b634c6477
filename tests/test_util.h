/* test_util.h - paths to shared models and build outputs for tests. */
#ifndef TSR_TEST_UTIL_H
#define TSR_TEST_UTIL_H

#ifndef TSR_SHARED_DIR
#define TSR_SHARED_DIR "../shared"
#endif
#ifndef TSR_BUILD_DIR
#define TSR_BUILD_DIR "build"
#endif

#define SHARED_MODEL(name) TSR_SHARED_DIR "/models/" name
#define SHARED_REF(name)   TSR_SHARED_DIR "/reference/" name
#define TESSERA_BIN        TSR_BUILD_DIR "/tessera"

#endif
