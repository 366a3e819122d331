// ggml's own reference quantizers as a command, for the test that our encoders write the same
// bytes (test/registry/ggml-reference.test.ts): `ggml-quants-ref TYPE in.f32 out.bin` quantizes the
// float32 values of in.f32 with quantize_row_<type>_ref. Built by scripts/build-ggml-quants-ref.sh
// against ggml-quants.c from the llama.cpp source node-llama-cpp ships.
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "ggml.h"
#include "ggml-quants.h"

// ggml-quants.c refers to these from parts of ggml this command does not use.
void ggml_abort(const char *file, int line, const char *fmt, ...) { (void)file; (void)line; (void)fmt; abort(); }
size_t ggml_row_size(enum ggml_type type, int64_t ne) { (void)type; (void)ne; abort(); }
const char *ggml_type_name(enum ggml_type type) { (void)type; abort(); }
size_t ggml_type_size(enum ggml_type type) { (void)type; abort(); }

int main(int argc, char **argv) {
  if (argc != 4) {
    fprintf(stderr, "usage: ggml-quants-ref Q4_0|Q8_0|Q5_0|Q5_1|Q4_K|Q5_K|Q6_K in.f32 out.bin\n");
    return 2;
  }
  FILE *in = fopen(argv[2], "rb");
  if (!in) { perror(argv[2]); return 1; }
  fseek(in, 0, SEEK_END);
  long bytes = ftell(in);
  fseek(in, 0, SEEK_SET);
  float *x = malloc(bytes);
  if (fread(x, 1, bytes, in) != (size_t)bytes) { perror("read"); return 1; }
  fclose(in);
  int64_t n = bytes / 4;
  void *y = malloc(bytes + 1024);
  size_t out = 0;
  const char *t = argv[1];
  if (!strcmp(t, "Q4_0")) { quantize_row_q4_0_ref(x, y, n); out = n / 32 * 18; }
  else if (!strcmp(t, "Q8_0")) { quantize_row_q8_0_ref(x, y, n); out = n / 32 * 34; }
  else if (!strcmp(t, "Q5_0")) { quantize_row_q5_0_ref(x, y, n); out = n / 32 * 22; }
  else if (!strcmp(t, "Q5_1")) { quantize_row_q5_1_ref(x, y, n); out = n / 32 * 24; }
  else if (!strcmp(t, "Q4_K")) { quantize_row_q4_K_ref(x, y, n); out = n / 256 * 144; }
  else if (!strcmp(t, "Q5_K")) { quantize_row_q5_K_ref(x, y, n); out = n / 256 * 176; }
  else if (!strcmp(t, "Q6_K")) { quantize_row_q6_K_ref(x, y, n); out = n / 256 * 210; }
  else { fprintf(stderr, "unknown type %s\n", t); return 2; }
  FILE *o = fopen(argv[3], "wb");
  if (!o || fwrite(y, 1, out, o) != out) { perror(argv[3]); return 1; }
  fclose(o);
  return 0;
}
