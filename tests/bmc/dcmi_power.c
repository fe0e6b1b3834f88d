/*
 * A DCMI power reading for OpenIPMI's ipmi_sim, which has no DCMI of its own.
 *
 * Loaded from lan.conf with `loadlib "dcmi_power.so" "/path/to/dcmi.val"`; answers the DCMI
 * group extension (netfn 0x2c, group 0xdc) command Get Power Reading (0x02) from the value
 * file, read again at every request so a test changes the simulated power by rewriting it
 * (atomically: write a temporary file, then rename it over this one).
 *
 * The value file holds one line, either
 *     CURRENT [MINIMUM MAXIMUM AVERAGE [STATE]]
 * in whole watts (0..65535; MINIMUM, MAXIMUM and AVERAGE default to CURRENT; STATE 1 =
 * activated, the default, 0 = deactivated), or
 *     ccode 0xNN
 * to answer with that completion code instead (0xc1: the BMC lacks DCMI; 0xff: the
 * "Unspecified error" busy BMCs return). A missing or unreadable file answers 0xff.
 * Every other DCMI command answers 0xc1 (invalid command).
 *
 * Built at test time by tests/bmc_sim.py:
 *     gcc -shared -fPIC -I/usr/include -o dcmi_power.so dcmi_power.c
 */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <OpenIPMI/mcserv.h>

#define DCMI_GROUP 0xdc
#define DCMI_GET_POWER_READING 0x02
#define CC_OK 0x00
#define CC_INVALID_CMD 0xc1
#define CC_REQ_LEN_INVALID 0xc7
#define CC_UNSPECIFIED 0xff
/* Sampling period reported with every reading, in milliseconds. */
#define SAMPLE_PERIOD_MS 1000u

static char value_path[4096];

struct power_values {
    unsigned int ccode;
    unsigned long current, minimum, maximum, average;
    unsigned long activated;
};

static void put_u16(unsigned char *p, unsigned long v)
{
    p[0] = v & 0xff;
    p[1] = (v >> 8) & 0xff;
}

static void put_u32(unsigned char *p, unsigned long v)
{
    put_u16(p, v & 0xffff);
    put_u16(p + 2, (v >> 16) & 0xffff);
}

/* Fills `v` from the value file; returns 0, or -1 (with a message on stderr) if unusable. */
static int read_values(struct power_values *v)
{
    char line[256];
    char word[16];
    unsigned long n[5];
    FILE *f = fopen(value_path, "r");
    int count;

    if (!f) {
        fprintf(stderr, "dcmi_power: cannot open %s: %s\n", value_path, strerror(errno));
        return -1;
    }
    if (!fgets(line, sizeof(line), f)) {
        fclose(f);
        fprintf(stderr, "dcmi_power: %s is empty\n", value_path);
        return -1;
    }
    fclose(f);

    memset(v, 0, sizeof(*v));
    if (sscanf(line, "%15s %lx", word, &n[0]) == 2 && strcmp(word, "ccode") == 0) {
        v->ccode = n[0] & 0xff;
        return 0;
    }
    count = sscanf(line, "%lu %lu %lu %lu %lu", &n[0], &n[1], &n[2], &n[3], &n[4]);
    if (count != 1 && count != 4 && count != 5) {
        fprintf(stderr, "dcmi_power: cannot parse %s: %s", value_path, line);
        return -1;
    }
    v->current = n[0];
    v->minimum = count >= 4 ? n[1] : n[0];
    v->maximum = count >= 4 ? n[2] : n[0];
    v->average = count >= 4 ? n[3] : n[0];
    v->activated = count == 5 ? n[4] : 1;
    return 0;
}

/* DCMI 1.5 §6.6.1 Get Power Reading: request = group id, mode, mode attributes, reserved. */
static void get_power_reading(msg_t *msg, unsigned char *rdata, unsigned int *rdata_len)
{
    struct power_values v;

    if (msg->len < 4) {
        rdata[0] = CC_REQ_LEN_INVALID;
        *rdata_len = 1;
        return;
    }
    if (read_values(&v) != 0) {
        rdata[0] = CC_UNSPECIFIED;
        *rdata_len = 1;
        return;
    }
    if (v.ccode != CC_OK) {
        rdata[0] = v.ccode;
        *rdata_len = 1;
        return;
    }
    rdata[0] = CC_OK;
    rdata[1] = DCMI_GROUP;
    put_u16(rdata + 2, v.current);
    put_u16(rdata + 4, v.minimum);
    put_u16(rdata + 6, v.maximum);
    put_u16(rdata + 8, v.average);
    put_u32(rdata + 10, (unsigned long)time(NULL));
    put_u32(rdata + 14, SAMPLE_PERIOD_MS);
    rdata[18] = v.activated ? 0x40 : 0x00;
    *rdata_len = 19;
}

static void handle_dcmi(lmc_data_t *mc, msg_t *msg, unsigned char *rdata,
                        unsigned int *rdata_len, void *cb_data)
{
    (void)mc;
    (void)cb_data;
    if (msg->cmd == DCMI_GET_POWER_READING) {
        get_power_reading(msg, rdata, rdata_len);
    } else {
        rdata[0] = CC_INVALID_CMD;
        *rdata_len = 1;
    }
}

/* The first argument is a sys_data_t * in OpenIPMI 2.0.33 and an emu_data_t * in later
 * releases; it is not used, so the module loads in both. */
int ipmi_sim_module_init(void *sys, const char *initstr)
{
    (void)sys;
    if (!initstr || !*initstr || strlen(initstr) >= sizeof(value_path)) {
        fprintf(stderr, "dcmi_power: loadlib needs the value file's path as its option\n");
        return EINVAL;
    }
    strcpy(value_path, initstr);
    ipmi_emu_register_group_extension_handler(DCMI_GROUP, handle_dcmi, NULL);
    return 0;
}
