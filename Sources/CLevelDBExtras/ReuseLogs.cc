#include "CLevelDBExtras.h"

#include <leveldb/options.h>

// The C API's options handle, as leveldb/c.cc defines it: the C++ options it wraps.
struct leveldb_options_t {
  leveldb::Options rep;
};

extern "C" void doccache_leveldb_options_set_reuse_logs(leveldb_options_t *options, unsigned char value) {
  options->rep.reuse_logs = value != 0;
}
