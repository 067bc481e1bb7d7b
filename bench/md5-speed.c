// CMD5 against libcrypto's MD5 and ISA-L's CRC-32C on one 1 MiB buffer, single stream, in one process: what the
// upload figure's ceiling (`openssl speed md5`) becomes with Silo's own MD5. Built and run by bench/md5.sh.
#include <isa-l/crc.h>
#include <openssl/evp.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "CMD5.h"

static double seconds(void) {
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)now.tv_sec + (double)now.tv_nsec / 1e9;
}

int main(int argc, char **argv) {
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    const size_t size = 1 << 20;
    const int passes = 256;
    unsigned char *buffer = malloc(size);
    if (buffer == NULL) return 1;
    for (size_t i = 0; i < size; i++) buffer[i] = (unsigned char)(i * 2654435761u >> 13);
    cmd5_context probe;
    cmd5_init(&probe);
    static const char *const levels[] = {"portable C", "C, CRC-32C by instruction", "AVX-512"};
    printf("CMD5 level %d (%s)\n", probe.level, levels[probe.level]);
    printf("%-8s %12s %12s %8s %16s %12s %8s\n", "round", "libcrypto", "CMD5", "ratio", "libcrypto+ISA-L", "CMD5 fused",
           "ratio");
    for (int round = 1; round <= rounds; round++) {
        unsigned char digest[16];
        unsigned int length;
        uint32_t crc = ~0u;
        double t0 = seconds();
        for (int i = 0; i < passes; i++) EVP_Digest(buffer, size, digest, &length, EVP_md5(), NULL);
        double t1 = seconds();
        for (int i = 0; i < passes; i++) {
            cmd5_context context;
            cmd5_init(&context);
            cmd5_update(&context, buffer, size);
            cmd5_final(&context, digest);
        }
        double t2 = seconds();
        for (int i = 0; i < passes; i++) {
            EVP_Digest(buffer, size, digest, &length, EVP_md5(), NULL);
            crc = crc32_iscsi(buffer, (int)size, crc);
        }
        double t3 = seconds();
        for (int i = 0; i < passes; i++) {
            cmd5_context context;
            cmd5_init(&context);
            if (!cmd5_update_crc32c(&context, buffer, size, &crc)) return 2;
            cmd5_final(&context, digest);
        }
        double t4 = seconds();
        printf("%-8d %9.0f MiB/s %7.0f MiB/s %8.3f %13.0f MiB/s %7.0f MiB/s %8.3f\n", round, passes / (t1 - t0),
               passes / (t2 - t1), (t1 - t0) / (t2 - t1), passes / (t3 - t2), passes / (t4 - t3), (t3 - t2) / (t4 - t3));
    }
    free(buffer);
    return 0;
}
