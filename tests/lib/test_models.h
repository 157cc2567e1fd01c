/* test_models.h — where a C test finds the test data: $TM_SHARED/models (tests/run.sh sets
 * TM_SHARED), else TM_SHARED_DIR/models, the folder the build was pointed at (../shared
 * beside the repository). A cmocka test whose file is not there skips, saying which file
 * and where it looked (tests/run.sh shows that line with the skip). */
#ifndef TM_TESTS_TEST_MODELS_H
#define TM_TESTS_TEST_MODELS_H

#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static inline const char *tm_test_models_dir(void)
{
    static char dir[2048];
    const char *shared = getenv("TM_SHARED");
    snprintf(dir, sizeof dir, "%s/models", shared && *shared ? shared : TM_SHARED_DIR);
    return dir;
}

/* `out` (a char array) gets the path of test model `name`; the calling test skips when the
 * file cannot be read. */
#define TM_TEST_MODEL(out, name)                                                                   \
    do {                                                                                           \
        snprintf(out, sizeof out, "%s/%s", tm_test_models_dir(), name);                           \
        if (access(out, R_OK) != 0) {                                                              \
            print_message("# SKIP reason: test model %s not found in %s (set TM_SHARED; docs/install.md: "  \
                          "Test data)\n", name, tm_test_models_dir());                              \
            skip();                                                                                \
        }                                                                                          \
    } while (0)

#endif /* TM_TESTS_TEST_MODELS_H */
