/* A test double for another Bloom filter module (RedisBloom, say) already loaded in the server:
 * it takes one of the names redis-bf needs, chosen by its load argument: `name` takes the module
 * name bf, `type` the data type name MBbloom-- (as module otherbloom), `command` the command
 * bf.add (as module otherbloom). tests/common/mod.rs builds it into target/ with the redismodule.h
 * of the redis-module crate, and tests/conflicts.rs loads it before the module. */
#include <string.h>
#define REDISMODULE_MAIN
#include "redismodule.h"

static void *load(RedisModuleIO *io, int encver) {
    (void)io;
    (void)encver;
    return NULL;
}

static void save(RedisModuleIO *io, void *value) {
    (void)io;
    (void)value;
}

static void release(void *value) { (void)value; }

static int add(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    (void)argv;
    (void)argc;
    return RedisModule_ReplyWithSimpleString(ctx, "OTHER");
}

int RedisModule_OnLoad(RedisModuleCtx *ctx, RedisModuleString **argv, int argc) {
    /* The argument decides the module's name, so it is read before Init binds the API. */
    int (*get_api)(const char *, void *) = (int (*)(const char *, void *))((void **)ctx)[0];
    const char *(*string_ptr_len)(const RedisModuleString *, size_t *) = NULL;
    get_api("RedisModule_StringPtrLen", (void *)&string_ptr_len);
    const char *what = argc > 0 ? string_ptr_len(argv[0], NULL) : "name";
    int name = strcmp(what, "name") == 0;
    if (RedisModule_Init(ctx, name ? "bf" : "otherbloom", 1, REDISMODULE_APIVER_1) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    if (strcmp(what, "type") == 0) {
        RedisModuleTypeMethods methods = {
            .version = REDISMODULE_TYPE_METHOD_VERSION,
            .rdb_load = load,
            .rdb_save = save,
            .free = release,
        };
        if (RedisModule_CreateDataType(ctx, "MBbloom--", 0, &methods) == NULL)
            return REDISMODULE_ERR;
    }
    if (strcmp(what, "command") == 0 &&
        RedisModule_CreateCommand(ctx, "bf.add", add, "write", 1, 1, 1) != REDISMODULE_OK)
        return REDISMODULE_ERR;
    return REDISMODULE_OK;
}
