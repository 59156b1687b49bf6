// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), the checksum of LevelDB's log and
// table records. x86-64 processors with SSE 4.2 compute it with the crc32 instruction, eight
// bytes at a time; others use a byte-wise table.
#include "CLevelDBExtras.h"

#include <cstring>

namespace {

struct Table {
    uint32_t entries[256];
    Table() {
        for (uint32_t n = 0; n < 256; n++) {
            uint32_t c = n;
            for (int k = 0; k < 8; k++) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
            entries[n] = c;
        }
    }
};

uint32_t tableExtend(uint32_t crc, const uint8_t *bytes, size_t count) {
    static const Table table;
    for (size_t i = 0; i < count; i++) crc = table.entries[(crc ^ bytes[i]) & 0xFF] ^ (crc >> 8);
    return crc;
}

#if defined(__x86_64__)
__attribute__((target("sse4.2")))
uint32_t hardwareExtend(uint32_t crc, const uint8_t *bytes, size_t count) {
    uint64_t wide = crc;
    while (count >= 8) {
        uint64_t word;
        std::memcpy(&word, bytes, 8);
        wide = __builtin_ia32_crc32di(wide, word);
        bytes += 8;
        count -= 8;
    }
    uint32_t narrow = static_cast<uint32_t>(wide);
    while (count > 0) {
        narrow = __builtin_ia32_crc32qi(narrow, *bytes);
        bytes++;
        count--;
    }
    return narrow;
}

bool hasHardwareCRC() {
    static const bool has = __builtin_cpu_supports("sse4.2");
    return has;
}
#endif

}  // namespace

extern "C" uint32_t doccache_crc32c(const uint8_t *bytes, size_t count) {
    uint32_t crc = 0xFFFFFFFFu;
#if defined(__x86_64__)
    if (hasHardwareCRC()) return ~hardwareExtend(crc, bytes, count);
#endif
    return ~tableExtend(crc, bytes, count);
}
