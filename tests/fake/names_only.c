/* A module that registers the command names it is given as load arguments, in their order, and
 * does nothing else: the bench's control for what registering redis-bf's names alone costs the
 * server's own commands (benches/e2e/neighbours.rs passes them in the order src/lib.rs registers
 * them). Each command answers +OK. Built like other_bloom.c, against the redis-module crate's
 * redismodule.h (tests/common/mod.rs). */
#define REDISMODULE_MAIN
#include "redismodule.h"

static int noop(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    return RedisModule_ReplyWithSimpleString(ctx, "OK");
}

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    if (RedisModule_Init(ctx, "namesonly", 1, REDISMODULE_APIVER_1) == REDISMODULE_ERR) {
        return REDISMODULE_ERR;
    }
    for (int i = 0; i < argc; i++) {
        const char *name = RedisModule_StringPtrLen(argv[i], NULL);
        if (RedisModule_CreateCommand(ctx, name, noop, "readonly", 1, 1, 1) == REDISMODULE_ERR) {
            return REDISMODULE_ERR;
        }
    }
    return REDISMODULE_OK;
}
