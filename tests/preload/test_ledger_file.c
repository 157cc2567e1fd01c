/* test_ledger_file.c — the ledger file's checks, lock and writes (preload/region/ledger_file.h):
 * a fresh image passes; one cut short, grown or scribbled on is "damaged"; a file that never
 * was a ledger, or one of another version, is refused without being called damaged; a second
 * open file's lock waits no longer than asked and is had once the first lets go; entries are
 * written in place and never outside the table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "preload/region/ledger_file.h"

static char dir[] = "/tmp/tm-ledger-file-XXXXXX";
static char path[64];
static tm_ledger_file image, copy;

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    snprintf(path, sizeof path, "%s/ledger", dir);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    return rmdir(dir);
}

/* Writes `size` bytes of `image` as the file and opens it read-write. */
static int write_file(size_t size)
{
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC, 0600);
    assert_true(fd >= 0);
    assert_int_equal(pwrite(fd, &image, size, 0), (ssize_t)size);
    return fd;
}

static const char *read_back(size_t size, bool *damaged)
{
    int fd = write_file(size);
    const char *why = tm_ledger_file_read(fd, &copy, damaged);
    close(fd);
    return why;
}

static void test_fresh_image_reads_back(void **state)
{
    (void)state;
    tm_ledger_file_init(&image);
    bool damaged = true;
    assert_null(read_back(sizeof image, &damaged));
    assert_false(damaged);
    assert_memory_equal(&copy, &image, sizeof image);
}

static void test_damage_is_named(void **state)
{
    (void)state;
    bool damaged;
    tm_ledger_file_init(&image);
    assert_string_equal(read_back(100, &damaged), "its size is not a ledger's");
    assert_true(damaged);
    int fd = write_file(sizeof image);
    assert_int_equal(ftruncate(fd, sizeof image + 4096), 0); /* grown */
    assert_string_equal(tm_ledger_file_read(fd, &copy, &damaged), "its size is not a ledger's");
    assert_true(damaged);
    close(fd);

    image.node[3] = TM_LEDGER_MAX_NODE + 1;
    assert_string_equal(read_back(sizeof image, &damaged), "a node column names no NUMA node");
    assert_true(damaged);
    tm_ledger_file_init(&image);
    image.node[0] = image.node[5] = 2;
    assert_string_equal(read_back(sizeof image, &damaged), "two node columns name one node");
    tm_ledger_file_init(&image);
    image.entry[17].pid = -5;
    assert_string_equal(read_back(sizeof image, &damaged), "an entry holds a negative pid");
    assert_true(damaged);
    tm_ledger_file_init(&image);
    image.entry[9] = (tm_ledger_entry){ .pid = 42, .family = 0, .family_start = 7 };
    assert_string_equal(read_back(sizeof image, &damaged), "an entry names no budget");
}

static void test_not_a_ledger_is_not_damaged(void **state)
{
    (void)state;
    bool damaged = true;
    memset(&image, 'x', sizeof image);
    assert_string_equal(read_back(sizeof image, &damaged), "it is not a tiermem ledger");
    assert_false(damaged);
    assert_string_equal(read_back(0, &damaged), "it is not a tiermem ledger");
    assert_false(damaged);
    tm_ledger_file_init(&image);
    image.version = 1;
    assert_string_equal(read_back(sizeof image, &damaged), "it is a tiermem ledger of another version");
    assert_false(damaged);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void test_lock_waits_as_long_as_asked(void **state)
{
    (void)state;
    tm_ledger_file_init(&image);
    close(write_file(sizeof image));
    int first = open(path, O_RDWR), second = open(path, O_RDWR);
    assert_true(first >= 0 && second >= 0);
    assert_true(tm_ledger_file_lock(first, 0));
    double start = now_s();
    assert_false(tm_ledger_file_lock(second, 150));
    double waited = now_s() - start;
    assert_true(waited >= 0.15 && waited < 1.0);
    tm_ledger_file_unlock(first);
    assert_true(tm_ledger_file_lock(second, 0));
    close(second); /* closing the holder's only descriptor lets go, as a death does */
    assert_true(tm_ledger_file_lock(first, 0));
    close(first);
}

static void test_entries_written_in_place_only(void **state)
{
    (void)state;
    tm_ledger_file_init(&image);
    int fd = write_file(sizeof image);
    tm_ledger_entry entry = { .pid = 1234, .family = 1234, .start_time = 99, .family_start = 99 };
    entry.bytes[1] = 8 << 20;
    assert_true(tm_ledger_file_write_entry(fd, 200, &entry));
    assert_false(tm_ledger_file_write_entry(fd, -1, &entry));
    assert_false(tm_ledger_file_write_entry(fd, TM_LEDGER_PROCESSES, &entry));
    image.node[1] = 3;
    assert_true(tm_ledger_file_write_nodes(fd, &image));
    bool damaged;
    assert_null(tm_ledger_file_read(fd, &copy, &damaged));
    assert_memory_equal(&copy.entry[200], &entry, sizeof entry);
    assert_int_equal(copy.node[1], 3);
    assert_true(tm_ledger_in_family(&copy.entry[200], 1234, 99));
    assert_false(tm_ledger_in_family(&copy.entry[200], 1234, 98));
    assert_false(tm_ledger_in_family(&copy.entry[0], 0, 0)); /* a free entry is nobody's */
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    assert_int_equal(st.st_size, sizeof image);
    close(fd);
}

static void test_refusals(void **state)
{
    (void)state;
    int fd = write_file(sizeof image);
    assert_null(tm_ledger_file_refusal(fd, false, 0, false));
    assert_int_equal(fchmod(fd, 0660), 0);
    assert_null(tm_ledger_file_refusal(fd, true, getegid(), false));
    assert_int_equal(fchmod(fd, 0666), 0);
    assert_string_equal(tm_ledger_file_refusal(fd, true, getegid(), false),
                        "it does not belong to the group, or others may use it");
    assert_string_equal(tm_ledger_file_refusal(fd, true, getegid() + 1, false),
                        "it does not belong to the group, or others may use it");
    close(fd);
    int dir_fd = open(dir, O_RDONLY | O_DIRECTORY);
    assert_string_equal(tm_ledger_file_refusal(dir_fd, false, 0, false), "it is not a regular file");
    close(dir_fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_fresh_image_reads_back),   cmocka_unit_test(test_damage_is_named),
        cmocka_unit_test(test_not_a_ledger_is_not_damaged), cmocka_unit_test(test_lock_waits_as_long_as_asked),
        cmocka_unit_test(test_entries_written_in_place_only), cmocka_unit_test(test_refusals),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
