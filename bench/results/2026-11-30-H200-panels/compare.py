import csv,collections,sys
lines=[l for l in open(sys.argv[1]) if not l.startswith('#')]
rows=list(csv.DictReader(lines))
best=collections.defaultdict(dict)
for r in rows:
    if r['ok']!='1': continue
    key=(r['graph'],r['op'],int(r['F']))
    s=r['schedule']; t=float(r['median_ms'])
    kind='panel' if 'panel' in s else 'other'
    if kind not in best[key] or t<best[key][kind][0]: best[key][kind]=(t,s,float(r['bound_fraction']))
for key in sorted(best):
    b=best[key]
    if 'panel' in b and 'other' in b:
        print(f"{key[0]:13s} {key[1]:11s} F={key[2]:<4d} gop {b['other'][0]:.4f} {b['other'][1]:22s} {100*b['other'][2]:5.1f}%  panels {b['panel'][0]:.4f} {b['panel'][1]:27s} {100*b['panel'][2]:5.1f}%  {b['other'][0]/b['panel'][0]:.2f}x")
