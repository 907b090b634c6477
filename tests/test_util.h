/* test_util.h - paths to the shared models and to build outputs for tests.
 *
 * The model files are found at run time: $TSR_SHARED (which `make test`
 * sets from SHARED), else ../shared beside the source tree.  C code takes
 * SHARED_MODEL("x") (a path string that lives until exit); a shell command
 * line takes SH_MODEL("x"), which the shell expands from $TSR_SHARED (the
 * test program exports it at start, tests/support/paths.c). */
#ifndef TSR_TEST_UTIL_H
#define TSR_TEST_UTIL_H

#ifndef TSR_BUILD_DIR
#define TSR_BUILD_DIR "build"
#endif
#ifndef TSR_SOURCE_DIR
#define TSR_SOURCE_DIR "."
#endif

/* The shared folder (no trailing slash). */
const char *tsr_test_shared(void);
/* shared + "/" + rel; the same pointer for the same rel. */
const char *tsr_test_path(const char *rel);

#define SHARED_MODEL(name) tsr_test_path("models/" name)
#define SHARED_REF(name)   tsr_test_path("reference/" name)
#define SH_MODEL(name)     "\"$TSR_SHARED/models/" name "\""
#define SH_REF(name)       "\"$TSR_SHARED/reference/" name "\""
#define TESSERA_BIN        TSR_BUILD_DIR "/tessera"

#endif
