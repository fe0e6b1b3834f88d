/*
 * Fan firmware for OpenIPMI's ipmi_sim: the vendor OEM fan-control commands of Dell iDRACs and
 * Supermicro BMCs, with fans and a CPU temperature that follow the duty they set.
 *
 * Loaded from lan.conf with `loadlib "fan_firmware.so" "/path/to/bmc/workdir"`; the option is
 * the directory of the value files the simulated sensors read (bmc.emu), which this plugin
 * rewrites after every accepted command that sets state. Nothing is written before the first
 * fan command, so tests that write those files themselves keep working.
 *
 * Commands (netfn 0x30; completion code 0xc7 on a wrong request length, 0xcc on a bad value):
 *   Dell, cmd 0x30 ("Add undocumented Dell OEM fan control commands",
 *   https://github.com/ipmitool/ipmitool/issues/30):
 *     01 00        manual fan control            01 01   automatic fan control
 *     02 ff DD     all fans to duty DD (0..100)  02 NN DD  fan NN to DD, applied to all here
 *     A duty set in automatic mode is kept but only takes effect in manual mode, as on iDRACs
 *     whose firmware overrides it.
 *   Supermicro X10/X11 ("Supermicro X9/X10/X11 Fan Speed Control", https://forums.
 *   servethehome.com/index.php?resources/supermicro-x9-x10-x11-fan-speed-control.20/; the
 *   comments of khorton/nas_fan_control's PID_fan_control.pl and
 *   https://github.com/khorton/nas_fan_control/issues/7):
 *     cmd 0x45: 00        get fan mode -> mode byte
 *               01 MM     set fan mode: 0 standard, 1 full, 2 optimal, 4 heavy IO
 *     cmd 0x70: 66 01 ZZ DD   zone ZZ (0 or 1) to duty DD (0..100)
 *               66 00 ZZ      get zone ZZ's duty -> the duty it runs at
 *     Zone duties take effect only in full mode; entering it puts both zones at 100 until a
 *     duty is set. The other modes are automatic (zones run at the automatic duty).
 *
 * Model: effective duty = Dell manual duty if Dell manual, else zone 0's duty in Supermicro
 * full mode, else the automatic duty (50). FAN1 = 600 + 96 x duty rpm, FAN2 = 0.93 x FAN1,
 * both rounded to 50 rpm; CPU temperature = BASE + SLOPE x (100 - duty) whole degrees C, with
 * "BASE SLOPE" read from thermal.val at each change (30 0.5 without it). Roundings are half up.
 *
 * Files in the directory, each replaced atomically (temporary file, then rename):
 *   fan1.val, fan2.val   integer rpm             temp1.val   integer degrees C
 *   fans.state           one line: mode=auto|manual duty=D dell_manual=0|1 smc_mode=M
 *                        zone0=D zone1=D (zoneN: the duty last set for the zone)
 *   fans.log             appended, one line per accepted command ("dell manual", "dell duty
 *                        60", "smc zone 0 duty 60", "smc get mode", ...)
 * A restarted ipmi_sim starts in automatic mode; if fans.state exists it rewrites the files
 * for that state and logs "reset", so they never describe a firmware that is gone.
 *
 * Built at test time by tests/bmc_sim.py:
 *     gcc -shared -fPIC -O1 -Wall -I/usr/include -o fan_firmware.so fan_firmware.c
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <OpenIPMI/mcserv.h>

#define OEM_NETFN 0x30
#define DELL_FAN_CMD 0x30
#define SMC_FAN_MODE_CMD 0x45
#define SMC_ZONE_CMD 0x70
#define SMC_ZONE_SUBCMD 0x66
#define SMC_FULL 1
#define CC_OK 0x00
#define CC_REQ_LEN_INVALID 0xc7
#define CC_INVALID_DATA 0xcc
#define AUTO_DUTY 50
#define MAX_DUTY 100

static char dir[3800];

static struct {
    int dell_manual;
    int dell_duty;
    int smc_mode;
    int zone[2];
} fw = { 0, AUTO_DUTY, 0, { AUTO_DUTY, AUTO_DUTY } };

static int effective_duty(void)
{
    if (fw.dell_manual)
        return fw.dell_duty;
    if (fw.smc_mode == SMC_FULL)
        return fw.zone[0];
    return AUTO_DUTY;
}

/* Half up, clamped to a sensor's raw byte range; avoids libm, which ipmi_sim may not load. */
static long round_clamped(double x)
{
    if (x < 0)
        return 0;
    if (x > 255)
        return 255;
    return (long)(x + 0.5);
}

static void path_of(char *buf, size_t size, const char *name)
{
    snprintf(buf, size, "%s/%s", dir, name);
}

static void write_file(const char *name, const char *text)
{
    char path[4096], tmp[4100];
    FILE *f;

    path_of(path, sizeof(path), name);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    f = fopen(tmp, "w");
    if (!f || fputs(text, f) == EOF || fclose(f) != 0 || rename(tmp, path) != 0)
        fprintf(stderr, "fan_firmware: cannot write %s: %s\n", path, strerror(errno));
}

static void read_thermal(double *base, double *slope)
{
    char path[4096];
    FILE *f;

    *base = 30;
    *slope = 0.5;
    path_of(path, sizeof(path), "thermal.val");
    f = fopen(path, "r");
    if (!f)
        return;
    if (fscanf(f, "%lf %lf", base, slope) != 2) {
        fprintf(stderr, "fan_firmware: %s is not \"BASE SLOPE\"; using 30 0.5\n", path);
        *base = 30;
        *slope = 0.5;
    }
    fclose(f);
}

/* The sensor files first, so whoever sees the new fans.state also sees the new values. */
static void write_outputs(void)
{
    int duty = effective_duty();
    long rpm1 = (600 + 96L * duty + 25) / 50 * 50;
    long rpm2 = (rpm1 * 93 + 2500) / 5000 * 50;
    double base, slope;
    char text[256];

    read_thermal(&base, &slope);
    snprintf(text, sizeof(text), "%ld\n", round_clamped(base + slope * (MAX_DUTY - duty)));
    write_file("temp1.val", text);
    snprintf(text, sizeof(text), "%ld\n", rpm1);
    write_file("fan1.val", text);
    snprintf(text, sizeof(text), "%ld\n", rpm2);
    write_file("fan2.val", text);
    snprintf(text, sizeof(text), "mode=%s duty=%d dell_manual=%d smc_mode=%d zone0=%d zone1=%d\n",
             fw.dell_manual || fw.smc_mode == SMC_FULL ? "manual" : "auto", duty, fw.dell_manual,
             fw.smc_mode, fw.zone[0], fw.zone[1]);
    write_file("fans.state", text);
}

static void log_line(const char *line)
{
    char path[4096];
    FILE *f;

    path_of(path, sizeof(path), "fans.log");
    f = fopen(path, "a");
    if (!f || fprintf(f, "%s\n", line) < 0 || fclose(f) != 0)
        fprintf(stderr, "fan_firmware: cannot append to %s: %s\n", path, strerror(errno));
}

/* Logs an accepted command that sets state, after writing what it changed. */
static int accepted(const char *line)
{
    write_outputs();
    log_line(line);
    return CC_OK;
}

/* Each command returns its completion code; `*out` is set to a response byte when it has one. */
static int dell(const unsigned char *d, unsigned int len, int *out)
{
    char line[64];

    (void)out;
    if (len < 1)
        return CC_REQ_LEN_INVALID;
    if (d[0] == 0x01) {
        if (len != 2)
            return CC_REQ_LEN_INVALID;
        if (d[1] > 1)
            return CC_INVALID_DATA;
        fw.dell_manual = d[1] == 0;
        return accepted(fw.dell_manual ? "dell manual" : "dell auto");
    }
    if (d[0] != 0x02)
        return CC_INVALID_DATA;
    if (len != 3)
        return CC_REQ_LEN_INVALID;
    if (d[2] > MAX_DUTY)
        return CC_INVALID_DATA;
    fw.dell_duty = d[2];
    if (d[1] == 0xff)
        snprintf(line, sizeof(line), "dell duty %d", d[2]);
    else
        snprintf(line, sizeof(line), "dell fan %d duty %d", d[1], d[2]);
    return accepted(line);
}

static int smc_mode(const unsigned char *d, unsigned int len, int *out)
{
    char line[64];

    if (len < 1)
        return CC_REQ_LEN_INVALID;
    if (d[0] == 0x00) {
        if (len != 1)
            return CC_REQ_LEN_INVALID;
        log_line("smc get mode");
        *out = fw.smc_mode;
        return CC_OK;
    }
    if (d[0] != 0x01)
        return CC_INVALID_DATA;
    if (len != 2)
        return CC_REQ_LEN_INVALID;
    if (d[1] != 0 && d[1] != 1 && d[1] != 2 && d[1] != 4)
        return CC_INVALID_DATA;
    if (d[1] == SMC_FULL && fw.smc_mode != SMC_FULL)
        fw.zone[0] = fw.zone[1] = MAX_DUTY;
    fw.smc_mode = d[1];
    snprintf(line, sizeof(line), "smc mode %d", d[1]);
    return accepted(line);
}

static int smc_zone(const unsigned char *d, unsigned int len, int *out)
{
    char line[64];

    if (len < 2)
        return CC_REQ_LEN_INVALID;
    if (d[0] != SMC_ZONE_SUBCMD || d[1] > 1)
        return CC_INVALID_DATA;
    if (len != (d[1] == 0x01 ? 4u : 3u))
        return CC_REQ_LEN_INVALID;
    if (d[2] > 1)
        return CC_INVALID_DATA;
    if (d[1] == 0x00) {
        snprintf(line, sizeof(line), "smc get zone %d", d[2]);
        log_line(line);
        *out = fw.smc_mode == SMC_FULL ? fw.zone[d[2]] : AUTO_DUTY;
        return CC_OK;
    }
    if (d[3] > MAX_DUTY)
        return CC_INVALID_DATA;
    fw.zone[d[2]] = d[3];
    snprintf(line, sizeof(line), "smc zone %d duty %d", d[2], d[3]);
    return accepted(line);
}

static void handle_oem(lmc_data_t *mc, msg_t *msg, unsigned char *rdata,
                       unsigned int *rdata_len, void *cb_data)
{
    int out = -1;
    int ccode;

    (void)mc;
    (void)cb_data;
    if (msg->cmd == DELL_FAN_CMD)
        ccode = dell(msg->data, msg->len, &out);
    else if (msg->cmd == SMC_FAN_MODE_CMD)
        ccode = smc_mode(msg->data, msg->len, &out);
    else
        ccode = smc_zone(msg->data, msg->len, &out);
    rdata[0] = ccode;
    *rdata_len = 1;
    if (ccode == CC_OK && out >= 0) {
        rdata[1] = out;
        *rdata_len = 2;
    }
}

/* The first argument is a sys_data_t * in OpenIPMI 2.0.33 and an emu_data_t * in later
 * releases; it is not used, so the module loads in both. In 2.0.33 netfn 0x30 is dispatched
 * through a 256-entry table (PICMG uses commands 0x01..0x04), which these commands join. */
int ipmi_sim_module_init(void *sys, const char *initstr)
{
    char state[4096];
    int rv;

    (void)sys;
    if (!initstr || !*initstr || strlen(initstr) >= sizeof(dir)) {
        fprintf(stderr, "fan_firmware: loadlib needs the BMC work directory as its option\n");
        return EINVAL;
    }
    strcpy(dir, initstr);
    rv = ipmi_emu_register_cmd_handler(OEM_NETFN, DELL_FAN_CMD, handle_oem, NULL);
    if (!rv)
        rv = ipmi_emu_register_cmd_handler(OEM_NETFN, SMC_FAN_MODE_CMD, handle_oem, NULL);
    if (!rv)
        rv = ipmi_emu_register_cmd_handler(OEM_NETFN, SMC_ZONE_CMD, handle_oem, NULL);
    if (rv) {
        fprintf(stderr, "fan_firmware: cannot register the OEM commands: %s\n", strerror(rv));
        return rv;
    }
    path_of(state, sizeof(state), "fans.state");
    if (access(state, F_OK) == 0) {
        write_outputs();
        log_line("reset");
    }
    return 0;
}
