#ifndef DOCCACHE_CLEVELDB_EXTRAS_H
#define DOCCACHE_CLEVELDB_EXTRAS_H
// LevelDB options that the C API (leveldb/c.h) does not expose, set through the C++ API,
// and the CRC-32C that LevelDB's files are checked with.
#include <leveldb/c.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/// Sets `leveldb::Options::reuse_logs`: on open, keep appending to the last log file (and
/// the manifest) instead of writing the recovered log to a level-0 table and starting a new
/// log and manifest. Only safe when the last log ends with an intact record (see the LevelDB
/// module's `Options.reuseIntactLog`).
void doccache_leveldb_options_set_reuse_logs(leveldb_options_t *options, unsigned char value);

/// The CRC-32C (Castagnoli) of `count` bytes at `bytes`, unmasked: the processor's CRC
/// instruction where it has one (x86-64 SSE 4.2), a table otherwise.
uint32_t doccache_crc32c(const uint8_t *bytes, size_t count);

#ifdef __cplusplus
}
#endif

#endif
