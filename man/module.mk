# man/ — the manual pages, installed under share/man: one for every installed program
# (tests/integration/test_install.sh fails on a program without one) and libtiermem(7).
MAN_PAGES := $(wildcard man/*.1 man/*.7)
INSTALL_FILES += $(foreach p,$(MAN_PAGES),$(p):share/man/man$(subst .,,$(suffix $(p)))/$(notdir $(p)))
