/*
 * The engine's row loop for CSV and TSV stripes, in C (docs/decisions/native-row-loop.md).
 *
 * fps_rows() reads rows from `in` and writes each one as the JSON line the
 * JavaScript path would write (src/engine/map.ts, validate.ts, write/json.ts),
 * without making a string per field. It only writes a row it can prove the
 * JavaScript path would write byte for byte; any row it cannot (a transform
 * result it does not compute, a value that fails the schema, a ragged row,
 * text that is not plain UTF-8...) is handed back, tokenized, for the
 * JavaScript path to map, validate and write (FALLBACK), and anything it
 * cannot even tokenize as papaparse would (a quote in an odd place, a very
 * long row) ends its part of the stripe (BAIL). Built by `npm ci`
 * (scripts/build-native.sh); loaded with bun:ffi by rowloop.ts.
 */
#include <stdint.h>
#include <string.h>

enum { ST_END = 0, ST_FULL = 1, ST_FALLBACK = 2, ST_BAIL = 3 };

/* io[]: shared state with rowloop.ts (an Int32Array). */
enum {
  IO_POS = 0,     /* in/out: offset in `in` of the next row */
  IO_END = 1,     /* in: end of the rows in `in` */
  IO_OUT = 2,     /* in/out: bytes used in `out` */
  IO_OUTCAP = 3,  /* in: size of `out` */
  IO_ROWS = 4,    /* out: rows written by this call */
  IO_WROTE = 5,   /* in/out: a row was written before (the next one is preceded by ",\n") */
  IO_STATUS = 6,  /* out: ST_* */
  IO_NF = 7,      /* out (FALLBACK): the row's field count */
  IO_ROWEND = 8,  /* out (FALLBACK): offset just past the row */
  IO_SKIPPED = 9, /* out: blank rows skipped by this call */
  IO_FIELDS = 16  /* out (FALLBACK): per field start, end, escaped ("" inside) */
};
#define MAX_FIELDS 1024
#define MAX_ROW_BYTES (1 << 20)

/* plan[]: header, then PT_SIZE ints per target. */
enum { P_WIDTH = 0, P_DELIM = 1, P_QUOTE = 2, P_CRLF = 3, P_TARGETS = 4, P_FIXED = 5, P_HEADER = 8 };
enum {
  T_KIND = 0, T_FIELD, T_TRANSFORM, T_TYPE, T_FLAGS, T_KEY_OFF, T_KEY_LEN, T_STATIC_OFF, T_STATIC_LEN,
  T_MIN_LEN, T_MAX_LEN, T_ENUM_AT, T_ENUM_COUNT, PT_SIZE = 16
};
enum { K_SOURCED = 0, K_STATIC = 1 };
enum { X_NONE = 0, X_TRIM, X_UPPER, X_LOWER, X_NUMBER, X_INTEGER, X_BOOLEAN, X_DATE, X_STRING };
enum { Y_ANY = 0, Y_STRING, Y_NUMBER, Y_INTEGER, Y_BOOLEAN };
enum {
  F_REQUIRED = 1, F_DEFAULT = 2, F_FORMAT_DATE = 4, F_MIN_LEN = 8, F_MAX_LEN = 16,
  F_MIN = 32, F_MAX = 64, F_EX_MIN = 128, F_EX_MAX = 256, F_ENUM = 512
};
/* nums[]: 4 doubles per target: minimum, maximum, exclusiveMinimum, exclusiveMaximum. */

static const double POW10[16] = {1, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10, 1e11, 1e12, 1e13, 1e14, 1e15};
static const char HEX[] = "0123456789abcdef";

static inline int is_ws(uint8_t c) { return c == 32 || (c >= 9 && c <= 13); }

/* Eight bytes at a time (SWAR): whether a word holds a byte equal to b, below 0x20, or with its high bit set. Exact as booleans. */
#define ONES 0x0101010101010101ULL
#define HIGHS 0x8080808080808080ULL
static inline uint64_t load8(const uint8_t *p) {
  uint64_t x;
  memcpy(&x, p, 8);
  return x;
}
static inline uint64_t has_zero(uint64_t v) { return (v - ONES) & ~v & HIGHS; }
static inline uint64_t has_byte(uint64_t x, uint8_t b) { return has_zero(x ^ (ONES * b)); }
static inline uint64_t has_below_20(uint64_t x) { return (x - ONES * 0x20) & ~x & HIGHS; }
/* A word JSON.stringify copies as it is: no control character, quote, backslash or non-ASCII byte. */
static inline int plain8(uint64_t x) { return !(has_below_20(x) | has_byte(x, '"') | has_byte(x, '\\') | (x & HIGHS)); }

/* 0: holds ASCII other than white space; 1: only ASCII white space (or nothing); 2: white space and non-ASCII bytes. */
static int blankness(const uint8_t *in, int32_t s, int32_t e) {
  int r = 1;
  for (int32_t i = s; i < e; i++) {
    uint8_t c = in[i];
    if (c >= 0x80) r = 2;
    else if (!is_ws(c)) return 0;
  }
  return r;
}

/*
 * One record from `pos`, as papaparse reads it: fields into f (start, end,
 * escaped), *row_end past its line end. 0 ok; -1 bail (an unclosed quote
 * within [pos, end), text after a closing quote, too many fields, too long).
 */
static int tokenize(const uint8_t *in, int32_t pos, int32_t end, const int32_t *plan, int32_t *f, int32_t *nf_out, int32_t *row_end) {
  const uint8_t delim = (uint8_t)plan[P_DELIM], quote = (uint8_t)plan[P_QUOTE];
  const int crlf = plan[P_CRLF];
  int32_t p = pos, nf = 0;
  for (;;) {
    if (nf >= MAX_FIELDS || p - pos > MAX_ROW_BYTES) return -1;
    int32_t *fd = f + 3 * nf++;
    if (p < end && in[p] == quote) {
      int32_t s = p + 1, q = s, esc = 0;
      for (;;) {
        const uint8_t *hit = q < end ? memchr(in + q, quote, (size_t)(end - q)) : NULL;
        if (!hit) return -1;
        q = (int32_t)(hit - in);
        if (q + 1 < end && in[q + 1] == quote) {
          esc = 1;
          q += 2;
          continue;
        }
        break;
      }
      fd[0] = s, fd[1] = q, fd[2] = esc;
      p = q + 1;
      if (p >= end) {
        *nf_out = nf, *row_end = end;
        return 0;
      }
      if (in[p] == delim) {
        p++;
        continue;
      }
      if (!crlf && in[p] == '\n') {
        *nf_out = nf, *row_end = p + 1;
        return 0;
      }
      if (crlf && in[p] == '\r' && p + 1 < end && in[p + 1] == '\n') {
        *nf_out = nf, *row_end = p + 2;
        return 0;
      }
      return -1;
    }
    int32_t s = p;
    /* Whole words without the delimiter or a line feed first. */
    while (p + 8 <= end) {
      uint64_t x = load8(in + p);
      if (has_byte(x, delim) | has_byte(x, '\n')) break;
      p += 8;
    }
    for (; p < end; p++) {
      uint8_t c = in[p];
      if (c == delim) break;
      if (c == '\n' && (!crlf || (p > s && in[p - 1] == '\r'))) break;
    }
    fd[0] = s, fd[2] = 0;
    if (p >= end) {
      fd[1] = end;
      *nf_out = nf, *row_end = end;
      return 0;
    }
    if (in[p] == delim) {
      fd[1] = p++;
      continue;
    }
    fd[1] = crlf ? p - 1 : p;
    *nf_out = nf, *row_end = p + 1;
    return 0;
  }
}

/* Length of the valid UTF-8 sequence at in[i] (first byte >= 0x80), or 0. */
static int utf8_len(const uint8_t *in, int32_t i, int32_t e) {
  uint8_t c = in[i];
  if (c >= 0xC2 && c <= 0xDF) return i + 1 < e && (in[i + 1] & 0xC0) == 0x80 ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (i + 2 >= e) return 0;
    uint8_t c1 = in[i + 1], c2 = in[i + 2];
    if ((c1 & 0xC0) != 0x80 || (c2 & 0xC0) != 0x80) return 0;
    if (c == 0xE0 && c1 < 0xA0) return 0; /* overlong */
    if (c == 0xED && c1 >= 0xA0) return 0; /* a surrogate */
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (i + 3 >= e) return 0;
    uint8_t c1 = in[i + 1], c2 = in[i + 2], c3 = in[i + 3];
    if ((c1 & 0xC0) != 0x80 || (c2 & 0xC0) != 0x80 || (c3 & 0xC0) != 0x80) return 0;
    if (c == 0xF0 && c1 < 0x90) return 0;
    if (c == 0xF4 && c1 >= 0x90) return 0;
    return 4;
  }
  return 0;
}

/*
 * Writes [s, e) as a JSON string (quotes doubled inside a quoted field read
 * as one) with JSON.stringify's escapes; case 1 upper, 2 lower (ASCII only).
 * Answers the bytes written, or -1: not valid UTF-8, or non-ASCII with a case change.
 */
static int32_t put_string(uint8_t *o, const uint8_t *in, int32_t s, int32_t e, int esc, uint8_t quote, int kase) {
  uint8_t *w = o;
  *w++ = '"';
  for (int32_t i = s; i < e; i++) {
    /* Runs of eight bytes copied as they are (no case change, no doubled quote in them). */
    if (!kase) {
      while (i + 8 <= e) {
        uint64_t x = load8(in + i);
        if (!plain8(x) || (esc && has_byte(x, quote))) break;
        memcpy(w, &x, 8);
        w += 8;
        i += 8;
      }
      if (i >= e) break;
    }
    uint8_t c = in[i];
    if (c >= 0x80) {
      if (kase) return -1;
      int n = utf8_len(in, i, e);
      if (!n) return -1;
      memcpy(w, in + i, (size_t)n);
      w += n;
      i += n - 1;
      continue;
    }
    if (esc && c == quote) i++; /* "" in a quoted field is one quote */
    if (c == '"' || c == '\\') {
      *w++ = '\\';
      *w++ = c;
    } else if (c < 0x20) {
      *w++ = '\\';
      switch (c) {
        case '\b': *w++ = 'b'; break;
        case '\f': *w++ = 'f'; break;
        case '\n': *w++ = 'n'; break;
        case '\r': *w++ = 'r'; break;
        case '\t': *w++ = 't'; break;
        default: *w++ = 'u', *w++ = '0', *w++ = '0', *w++ = HEX[c >> 4], *w++ = HEX[c & 15];
      }
    } else if (kase == 1 && c >= 'a' && c <= 'z') {
      *w++ = c - 32;
    } else if (kase == 2 && c >= 'A' && c <= 'Z') {
      *w++ = c + 32;
    } else {
      *w++ = c;
    }
  }
  *w++ = '"';
  return (int32_t)(w - o);
}

/*
 * [s, e) as the engine's plain decimal (digits, at most one point, at most
 * 15 characters, not "."): its value as the JavaScript path computes it
 * (exact: see transforms.ts, `decimal`) and its text as JSON.stringify writes
 * that number into `txt`. Answers the text's length, or -1 when the text is
 * not such a decimal, or would be written with an exponent (below 1e-6).
 */
static int plain_decimal(const uint8_t *in, int32_t s, int32_t e, double *value, uint8_t *txt, int *whole) {
  int32_t n = e - s;
  if (n <= 0 || n > 15) return -1;
  double v = 0;
  int32_t point = -1;
  for (int32_t i = s; i < e; i++) {
    uint8_t c = in[i];
    if (c == '.' && point < 0) {
      point = i;
      continue;
    }
    if (c < '0' || c > '9') return -1;
    v = v * 10 + (c - '0');
  }
  if (point >= 0 && n == 1) return -1;
  int32_t int_end = point < 0 ? e : point;
  int32_t frac_s = point < 0 ? e : point + 1, frac_e = e;
  if (point >= 0) v = v / POW10[e - point - 1];
  while (frac_e > frac_s && in[frac_e - 1] == '0') frac_e--;
  int32_t int_s = s;
  while (int_s < int_end && in[int_s] == '0') int_s++;
  int len = 0;
  if (int_s == int_end) {
    if (frac_e == frac_s) {
      txt[0] = '0';
      *value = v, *whole = 1;
      return 1;
    }
    int32_t z = 0;
    while (frac_s + z < frac_e && in[frac_s + z] == '0') z++;
    if (z >= 6) return -1;
    txt[len++] = '0';
  } else {
    memcpy(txt, in + int_s, (size_t)(int_end - int_s));
    len = int_end - int_s;
  }
  if (frac_e > frac_s) {
    txt[len++] = '.';
    memcpy(txt + len, in + frac_s, (size_t)(frac_e - frac_s));
    len += frac_e - frac_s;
  }
  *value = v, *whole = frac_e == frac_s;
  return len;
}

static int digits(const uint8_t *in, int32_t at, int len) {
  int n = 0;
  for (int i = 0; i < len; i++) {
    int d = in[at + i] - '0';
    if (d < 0 || d > 9) return -1;
    n = n * 10 + d;
  }
  return n;
}

/* YYYY-MM-DD naming a real day (what the `date` transform passes through and ajv-formats' `date` accepts). */
static int iso_date(const uint8_t *in, int32_t s, int32_t e) {
  static const int DAYS[12] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
  if (e - s != 10 || in[s + 4] != '-' || in[s + 7] != '-') return 0;
  int y = digits(in, s, 4), m = digits(in, s + 5, 2), d = digits(in, s + 8, 2);
  if (y < 0 || m < 1 || m > 12 || d < 1) return 0;
  int leap = m == 2 && y % 4 == 0 && (y % 100 != 0 || y % 400 == 0);
  return d <= DAYS[m - 1] + leap;
}

static int equals(const uint8_t *in, int32_t s, int32_t e, const char *word) {
  size_t n = strlen(word);
  return (size_t)(e - s) == n && memcmp(in + s, word, n) == 0;
}

/* Code points in [s, e), a doubled quote counted once (ajv's minLength/maxLength count code points). */
static int32_t code_points(const uint8_t *in, int32_t s, int32_t e, int esc, uint8_t quote) {
  int32_t n = 0;
  for (int32_t i = s; i < e; i++) {
    uint8_t c = in[i];
    if ((c & 0xC0) == 0x80) continue;
    if (esc && c == quote) i++;
    n++;
  }
  return n;
}

/* Whether [s, e) (unescaped) equals bytes[off, off + len). */
static int same_text(const uint8_t *in, int32_t s, int32_t e, int esc, uint8_t quote, const uint8_t *b, int32_t len) {
  if (!esc) return e - s == len && memcmp(in + s, b, (size_t)len) == 0;
  int32_t j = 0;
  for (int32_t i = s; i < e; i++, j++) {
    if (j >= len || in[i] != b[j]) return 0;
    if (in[i] == quote) i++;
  }
  return j == len;
}

enum { V_ABSENT = 0, V_STRING, V_NUMBER, V_BOOL, V_FALLBACK };

/*
 * One row's JSON at `o` (room for it checked by the caller), or -1 when the
 * JavaScript path must take the row.
 */
static int32_t write_row(const uint8_t *in, const int32_t *f, const int32_t *plan, const uint8_t *bytes, const double *nums, uint8_t *o) {
  const uint8_t quote = (uint8_t)plan[P_QUOTE];
  const int targets = plan[P_TARGETS];
  uint8_t *w = o;
  uint8_t num[24];
  *w++ = '{';
  int first = 1;
  for (int t = 0; t < targets; t++) {
    const int32_t *T = plan + P_HEADER + t * PT_SIZE;
    const int flags = T[T_FLAGS];
    if (T[T_KIND] == K_STATIC) {
      if (T[T_STATIC_LEN] == 0) continue;
      if (!first) *w++ = ',';
      first = 0;
      memcpy(w, bytes + T[T_KEY_OFF], (size_t)T[T_KEY_LEN]);
      w += T[T_KEY_LEN];
      memcpy(w, bytes + T[T_STATIC_OFF], (size_t)T[T_STATIC_LEN]);
      w += T[T_STATIC_LEN];
      continue;
    }
    int kind = V_ABSENT;
    int32_t s = 0, e = 0;
    int esc = 0, kase = 0, bool_value = 0, numlen = 0, whole = 0;
    double value = 0;
    if (T[T_FIELD] >= 0) {
      const int32_t *fd = f + 3 * T[T_FIELD];
      s = fd[0], e = fd[1], esc = fd[2];
    }
    if (s < e) {
      kind = V_STRING;
      switch (T[T_TRANSFORM]) {
        case X_NONE:
        case X_STRING:
          break;
        case X_TRIM:
          while (s < e && is_ws(in[s])) s++;
          while (e > s && is_ws(in[e - 1])) e--;
          /* A non-ASCII end may be Unicode white space, which String.prototype.trim also removes. */
          if (s < e && (in[s] >= 0x80 || in[e - 1] >= 0x80)) return -1;
          if (s == e) kind = V_ABSENT;
          break;
        case X_UPPER:
          kase = 1;
          break;
        case X_LOWER:
          kase = 2;
          break;
        case X_NUMBER:
        case X_INTEGER:
          if (esc || (numlen = plain_decimal(in, s, e, &value, num, &whole)) < 0) return -1;
          if (T[T_TRANSFORM] == X_INTEGER && !whole) return -1;
          kind = V_NUMBER;
          break;
        case X_BOOLEAN:
          if (esc) return -1;
          if (equals(in, s, e, "true") || equals(in, s, e, "yes") || equals(in, s, e, "1") || equals(in, s, e, "y")) bool_value = 1;
          else if (equals(in, s, e, "false") || equals(in, s, e, "no") || equals(in, s, e, "0") || equals(in, s, e, "n")) bool_value = 0;
          else return -1;
          kind = V_BOOL;
          break;
        case X_DATE:
          if (esc || !iso_date(in, s, e)) return -1;
          break;
        default:
          return -1;
      }
    }
    if (kind == V_ABSENT) {
      /* ajv names a missing required property, or fills a default in: the JavaScript path does both. */
      if (flags & (F_REQUIRED | F_DEFAULT)) return -1;
      continue;
    }
    /* ajv's type coercion (coerceTypes: true), for the types and values the plan admits. */
    switch (T[T_TYPE]) {
      case Y_NUMBER:
      case Y_INTEGER:
        if (kind == V_STRING) {
          if (esc || kase || (numlen = plain_decimal(in, s, e, &value, num, &whole)) < 0) return -1;
          kind = V_NUMBER;
        }
        if (kind != V_NUMBER || (T[T_TYPE] == Y_INTEGER && !whole)) return -1;
        break;
      case Y_BOOLEAN:
        if (kind == V_STRING) {
          if (esc || kase) return -1;
          if (equals(in, s, e, "true")) bool_value = 1;
          else if (equals(in, s, e, "false")) bool_value = 0;
          else return -1;
          kind = V_BOOL;
        }
        if (kind != V_BOOL) return -1;
        break;
      case Y_STRING:
        if (kind != V_STRING) return -1;
        break;
      default:
        break;
    }
    if (kind == V_STRING) {
      /* Checks on the text as written (a case change keeps the length; the plan admits no enum or format with one). */
      if (flags & (F_MIN_LEN | F_MAX_LEN)) {
        int32_t n = code_points(in, s, e, esc, quote);
        if (((flags & F_MIN_LEN) && n < T[T_MIN_LEN]) || ((flags & F_MAX_LEN) && n > T[T_MAX_LEN])) return -1;
      }
      if ((flags & F_FORMAT_DATE) && (esc || !iso_date(in, s, e))) return -1;
      if (flags & F_ENUM) {
        int hit = 0;
        for (int k = 0; k < T[T_ENUM_COUNT] && !hit; k++) {
          const int32_t *en = plan + T[T_ENUM_AT] + 2 * k;
          hit = same_text(in, s, e, esc, quote, bytes + en[0], en[1]);
        }
        if (!hit) return -1;
      }
    } else if (kind == V_NUMBER) {
      const double *b = nums + 4 * t;
      if (flags & F_ENUM) return -1;
      if (((flags & F_MIN) && value < b[0]) || ((flags & F_MAX) && value > b[1]) || ((flags & F_EX_MIN) && value <= b[2]) || ((flags & F_EX_MAX) && value >= b[3])) return -1;
    } else if (flags & F_ENUM) {
      return -1;
    }
    if (!first) *w++ = ',';
    first = 0;
    memcpy(w, bytes + T[T_KEY_OFF], (size_t)T[T_KEY_LEN]);
    w += T[T_KEY_LEN];
    if (kind == V_STRING) {
      int32_t n = put_string(w, in, s, e, esc, quote, kase);
      if (n < 0) return -1;
      w += n;
    } else if (kind == V_NUMBER) {
      memcpy(w, num, (size_t)numlen);
      w += numlen;
    } else if (bool_value) {
      memcpy(w, "true", 4);
      w += 4;
    } else {
      memcpy(w, "false", 5);
      w += 5;
    }
  }
  *w++ = '}';
  return (int32_t)(w - o);
}

int32_t fps_rows(const uint8_t *in, uint8_t *out, int32_t *io, const int32_t *plan, const uint8_t *bytes, const double *nums) {
  int32_t pos = io[IO_POS];
  const int32_t end = io[IO_END], cap = io[IO_OUTCAP], width = plan[P_WIDTH];
  int32_t w = io[IO_OUT], rows = 0, skipped = 0, status = ST_END;
  int wrote = io[IO_WROTE];
  int32_t *f = io + IO_FIELDS;
  while (pos < end) {
    int32_t nf, row_end;
    if (tokenize(in, pos, end, plan, f, &nf, &row_end) < 0) {
      status = ST_BAIL;
      break;
    }
    int b = blankness(in, f[0], f[1]);
    if (b != 0) {
      for (int k = 1; k < nf && b != 0; k++) {
        int bk = blankness(in, f[3 * k], f[3 * k + 1]);
        b = bk == 0 ? 0 : (bk == 2 ? 2 : b);
      }
      if (b == 1) {
        /* Every field empty or white space: papaparse's reader skips it (skipEmptyLines), uncounted. */
        skipped++;
        pos = row_end;
        continue;
      }
    }
    if (b == 2 || nf != width) {
      status = ST_FALLBACK;
      io[IO_NF] = nf;
      io[IO_ROWEND] = row_end;
      break;
    }
    /* Room for the worst case: every byte of every field a target reads escaped as \u00XX (a field may be read
       by several targets), every key, static value and number. */
    int64_t need = 2 + (int64_t)plan[P_FIXED];
    for (int t = 0; t < plan[P_TARGETS]; t++) {
      const int32_t *T = plan + P_HEADER + t * PT_SIZE;
      if (T[T_KIND] == K_SOURCED && T[T_FIELD] >= 0) need += 6 * (int64_t)(f[3 * T[T_FIELD] + 1] - f[3 * T[T_FIELD]]);
    }
    if (need > cap - w) {
      if (need > cap) {
        status = ST_FALLBACK;
        io[IO_NF] = nf;
        io[IO_ROWEND] = row_end;
      } else status = ST_FULL;
      break;
    }
    int32_t sep = wrote ? 2 : 0;
    int32_t n = write_row(in, f, plan, bytes, nums, out + w + sep);
    if (n < 0) {
      status = ST_FALLBACK;
      io[IO_NF] = nf;
      io[IO_ROWEND] = row_end;
      break;
    }
    if (sep) out[w] = ',', out[w + 1] = '\n';
    w += sep + n;
    wrote = 1;
    rows++;
    pos = row_end;
  }
  io[IO_POS] = pos;
  io[IO_OUT] = w;
  io[IO_ROWS] = rows;
  io[IO_SKIPPED] = skipped;
  io[IO_WROTE] = wrote;
  io[IO_STATUS] = status;
  return status;
}
