package pages

const sysUserfaultfd = 282
