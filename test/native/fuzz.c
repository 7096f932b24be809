/*
 * Random bytes through fps_rows (src/engine/native/rowloop.c) with every buffer
 * malloc'd to its exact size, built with -fsanitize=address,undefined by
 * test/engine.native.test.ts: any read or write outside the input, the output
 * or the io and plan arrays stops the run. Also checks the calls' contract:
 * progress on every call, offsets inside the input, output inside its room.
 * Usage: fuzz ITERATIONS SEED
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int32_t fps_rows(const uint8_t *in, uint8_t *out, int32_t *io, const int32_t *plan, const uint8_t *bytes, const double *nums);

static uint64_t state;
static uint32_t rnd(void) {
  state = state * 6364136223846793005ULL + 1442695040888963407ULL;
  return (uint32_t)(state >> 33);
}

static const char *ALPHABET[] = {",", ",", "\"", "\"\"", "\n", "\r\n", "\r", "\t", " ", "a", "Z", "0", "1", "12", ".", "5.25", "-", "2024-02-29", "true",
                                 "yes", "\x01", "\\", "\xc3\xa9", "\xe2\x80\xa8", "\xf0\x9f\x98\x80", "\xff", "\xc3", "\xed\xa0\x80", "red", "0.0000001",
                                 /* longer than a word (the loop reads eight bytes at a time) */
                                 "a plain value longer than a word", "0123456789abcdef\x01tail", "quote\"\"inside a long one", "\xc3\xa9t\xc3\xa9 long text here",
                                 "tabs\tand,commas in one long text"};

#define FIELDS 4
#define TARGETS 6

int main(int argc, char **argv) {
  long iterations = argc > 1 ? atol(argv[1]) : 100000;
  state = argc > 2 ? strtoull(argv[2], NULL, 10) : 1;
  /* Six targets over four columns (column 1 read three times), each transform and type, enum and bounds. */
  static const char *keys = "\"a\":\"b\":\"c\":\"d\":\"e\":\"f\":redab\"x\"";
  const int32_t key_len = 4;
  int32_t plan_ints[8 + TARGETS * 16 + 6] = {0};
  int32_t *plan = malloc(sizeof plan_ints);
  memset(plan, 0, sizeof plan_ints);
  plan[0] = FIELDS, plan[1] = ',', plan[2] = '"', plan[4] = TARGETS;
  const int32_t fields[TARGETS] = {0, 1, 1, 1, 2, 3};
  const int32_t transforms[TARGETS] = {5, 1, 2, 3, 4, 6};
  const int32_t types[TARGETS] = {3, 1, 1, 0, 2, 4};
  const int32_t flags[TARGETS] = {1 | 32 | 64, 8 | 16 | 512, 0, 0, 128 | 256, 2};
  int32_t fixed = 2;
  for (int t = 0; t < TARGETS; t++) {
    int32_t *T = plan + 8 + t * 16;
    T[0] = 0, T[1] = fields[t], T[2] = transforms[t], T[3] = types[t], T[4] = flags[t];
    T[5] = t * key_len, T[6] = key_len, T[9] = 1, T[10] = 5;
    fixed += 1 + key_len + 24;
  }
  plan[5] = fixed;
  int32_t *enum_table = plan + 8 + TARGETS * 16;
  enum_table[0] = 24, enum_table[1] = 3, enum_table[2] = 27, enum_table[3] = 2, enum_table[4] = 29, enum_table[5] = 3;
  plan[8 + 16 + 11] = 8 + TARGETS * 16, plan[8 + 16 + 12] = 3;
  uint8_t *bytes = malloc(strlen(keys));
  memcpy(bytes, keys, strlen(keys));
  double *nums = malloc(sizeof(double) * 4 * TARGETS);
  memset(nums, 0, sizeof(double) * 4 * TARGETS);
  nums[0] = 1, nums[1] = 1e6, nums[4 * 4 + 2] = 0, nums[4 * 4 + 3] = 1000;
  int32_t *io = malloc(sizeof(int32_t) * (16 + 3 * 1024));

  long rows = 0, fallbacks = 0, bails = 0;
  for (long it = 0; it < iterations; it++) {
    plan[3] = rnd() % 2; /* LF or CRLF */
    int32_t len = 0, cap = 1 + (int32_t)(rnd() % 2048);
    char text[8192];
    /* Rows of values each column takes, with junk from ALPHABET mixed in at a rate of the input's. */
    static const char *GOOD[FIELDS][3] = {{"12", "7", "100"}, {"red", " red ", "a longer text than eight"}, {"5.25", "12", "999.5"}, {"yes", "true", "n"}};
    const uint32_t junk = rnd() % 5;
    int rows_in = (int)(rnd() % 40);
    for (int r = 0; r < rows_in && len < 7000; r++) {
      int width = rnd() % 10 == 0 ? (int)(rnd() % 6) : FIELDS;
      for (int c = 0; c < width; c++) {
        if (c > 0) text[len++] = ',';
        if (c < FIELDS && rnd() % 8 >= junk) {
          const char *g = GOOD[c][rnd() % 3];
          int quoted = rnd() % 6 == 0;
          if (quoted) text[len++] = '"';
          memcpy(text + len, g, strlen(g));
          len += (int32_t)strlen(g);
          if (quoted) text[len++] = '"';
        } else {
          for (int k = (int)(rnd() % 4); k >= 0; k--) {
            const char *a = ALPHABET[rnd() % (sizeof ALPHABET / sizeof *ALPHABET)];
            memcpy(text + len, a, strlen(a));
            len += (int32_t)strlen(a);
          }
        }
      }
      if (r < rows_in - 1 || rnd() % 2) {
        if (plan[3]) text[len++] = '\r';
        text[len++] = '\n';
      }
    }
    uint8_t *in = malloc((size_t)len + 1); /* never empty for malloc; only len bytes are the input */
    memcpy(in, text, (size_t)len);
    uint8_t *out = malloc((size_t)cap);
    memset(io, 0, sizeof(int32_t) * 16);
    io[1] = len, io[3] = cap;
    for (int calls = 0;; calls++) {
      int32_t pos = io[0];
      int32_t st = fps_rows(in, out, io, plan, bytes, nums);
      if (io[0] < pos || io[0] > len || io[2] < 0 || io[2] > cap) {
        fprintf(stderr, "bad offsets: pos %d -> %d of %d, out %d of %d (iteration %ld)\n", pos, io[0], len, io[2], cap, it);
        return 1;
      }
      rows += io[4];
      if (st == 0) break;
      if (st == 3) {
        bails++;
        break;
      }
      if (st == 1) {
        if (io[2] == 0) {
          fprintf(stderr, "FULL with an empty buffer (iteration %ld)\n", it);
          return 1;
        }
        io[2] = 0;
        continue;
      }
      /* FALLBACK: the row is JavaScript's; its fields must lie inside it. */
      fallbacks++;
      if (io[8] <= io[0] || io[8] > len || io[7] < 1 || io[7] > 1024) {
        fprintf(stderr, "bad fallback row: %d..%d, %d fields (iteration %ld)\n", io[0], io[8], io[7], it);
        return 1;
      }
      for (int k = 0; k < io[7]; k++) {
        int32_t s = io[16 + 3 * k], e = io[16 + 3 * k + 1];
        if (s < io[0] || e < s || e > io[8]) {
          fprintf(stderr, "bad field %d: %d..%d in row %d..%d (iteration %ld)\n", k, s, e, io[0], io[8], it);
          return 1;
        }
      }
      io[0] = io[8];
    }
    free(in);
    free(out);
  }
  free(plan), free(bytes), free(nums), free(io);
  printf("%ld inputs: %ld rows written, %ld handed back, %ld stopped early\n", iterations, rows, fallbacks, bails);
  return 0;
}
