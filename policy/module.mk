# policy/ — decisions in plain C (configuration, tier model, rules, placement), no CUDA.
# Linked into libtiermem.so and into the policy unit tests.
POLICY_OBJS := $(patsubst %.c,$(O)/obj/%.o,$(wildcard policy/*.c))

$(O)/obj/policy/%.o: CFLAGS += -fvisibility=hidden
