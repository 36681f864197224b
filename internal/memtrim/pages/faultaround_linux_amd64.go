package pages

const sysUserfaultfd = 323
