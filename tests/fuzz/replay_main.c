/* meshbatch fuzzing: run saved inputs through a harness without libFuzzer
 * (every build; the `fuzz_regressions_*` tests). Arguments: files or
 * folders (every regular file inside, in name order). Each input must
 * return normally; the sanitizer build reports any memory error. Prints
 * how many inputs ran; exit 1 if an argument cannot be read, 0 else. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "fuzz_common.h"

static int run_file(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return -1;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
  const int ok = buf && (n == 0 || fread(buf, 1, (size_t)n, f) == (size_t)n);
  fclose(f);
  if (ok) mb_fuzz_one(buf, (size_t)n);
  mb_error_clear();
  free(buf);
  return ok ? 0 : -1;
}

static int by_name(const void *a, const void *b) {
  return strcmp(*(char *const *)a, *(char *const *)b);
}

int main(int argc, char **argv) {
  mb_fuzz_init();
  long count = 0;
  for (int i = 1; i < argc; i++) {
    struct stat st;
    if (stat(argv[i], &st) != 0) {
      fprintf(stderr, "replay: cannot read %s\n", argv[i]);
      return 1;
    }
    if (!S_ISDIR(st.st_mode)) {
      if (run_file(argv[i])) return 1;
      count++;
      continue;
    }
    struct dirent **list = NULL;
    int n = scandir(argv[i], &list, NULL, NULL);
    if (n < 0) return 1;
    char **names = malloc(sizeof *names * (size_t)(n ? n : 1));
    int m = 0;
    for (int k = 0; k < n; k++) {
      if (list[k]->d_name[0] != '.') {
        size_t len = strlen(argv[i]) + strlen(list[k]->d_name) + 2;
        names[m] = malloc(len);
        snprintf(names[m++], len, "%s/%s", argv[i], list[k]->d_name);
      }
      free(list[k]);
    }
    free(list);
    qsort(names, (size_t)m, sizeof *names, by_name);
    for (int k = 0; k < m; k++) {
      if (stat(names[k], &st) == 0 && S_ISREG(st.st_mode)) {
        if (run_file(names[k])) return 1;
        count++;
      }
      free(names[k]);
    }
    free(names);
  }
  printf("replay: %ld inputs ran through the reader without a crash\n", count);
  return 0;
}
