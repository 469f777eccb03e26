/* A C program as a user writes it: includes the header, links the library, reads each
   input from a file (raw bytes, C order), runs the model, writes each output to a file.
   Usage: run_model FOLDER IN_0.bin ... IN_n.bin OUT_0.bin ... OUT_m.bin
   MODEL_H names the header (-DMODEL_H='"model.h"') and P(x) the API's prefix. */
#include <stdio.h>
#include <stdlib.h>
#include MODEL_H

static void *read_file(const char *path, size_t bytes) {
    FILE *in = fopen(path, "rb");
    void *data = malloc(bytes);
    if (!in || !data || fread(data, 1, bytes, in) != bytes || fgetc(in) != EOF) {
        fprintf(stderr, "cannot read %zu bytes from %s\n", bytes, path);
        exit(3);
    }
    fclose(in);
    return data;
}

int main(int argc, char **argv) {
    P(model) *model = NULL;
    int inputs = P(input_count)(), outputs = P(output_count)(), i, status;
    if (argc != 2 + inputs + outputs) {
        fprintf(stderr, "usage: %s FOLDER with %d input and %d output files\n", argv[0],
                inputs, outputs);
        return 2;
    }
    status = P(create)(argv[1], &model);
    if (status != POLYOPT_OK) {
        fprintf(stderr, "create failed (%d): %s\n", status, P(error_message)());
        return 1;
    }
    for (i = 0; i < inputs; i++) {
        size_t bytes = P(input_bytes)(i);
        if (P(set_input)(model, i, read_file(argv[2 + i], bytes), bytes) != POLYOPT_OK) {
            fprintf(stderr, "set_input: %s\n", P(error_message)());
            return 1;
        }
    }
    if (P(run)(model) != POLYOPT_OK) {
        fprintf(stderr, "run failed: %s\n", P(error_message)());
        return 1;
    }
    for (i = 0; i < outputs; i++) {
        size_t bytes = P(output_bytes)(i);
        void *data = malloc(bytes);
        FILE *out = fopen(argv[2 + inputs + i], "wb");
        if (!data || !out || P(get_output)(model, i, data, bytes) != POLYOPT_OK ||
            fwrite(data, 1, bytes, out) != bytes) {
            fprintf(stderr, "cannot write output %s: %s\n", P(output_name)(i),
                    P(error_message)());
            return 1;
        }
        fclose(out);
        free(data);
    }
    P(destroy)(model);
    return 0;
}
