import csv,sys
def load(f):
    rows=list(csv.reader(open(f)))
    h=[i for i,r in enumerate(rows) if 'Metric Name' in r][0]
    hdr=rows[h]
    return [dict(zip(hdr,r)) for r in rows[h+1:] if len(r)>=15]
keys=['Duration','Registers Per Thread','Waves Per SM','Achieved Occupancy','Theoretical Occupancy','L1/TEX Hit Rate','L2 Hit Rate','DRAM Throughput','L2 Cache Throughput','L1/TEX Cache Throughput','Warp Cycles Per Issued Instruction','Executed Instructions','Grid Size','Block Size','Mem Pipes Busy','Block Limit Registers','Eligible Warps Per Scheduler']
for f in sys.argv[1:]:
    rs=load(f)
    ids=[]
    for d in rs:
        if d['ID'] not in ids: ids.append(d['ID'])
    for i in ids:
        m={}
        for d in rs:
            if d['ID']==i and d.get('Metric Name'): m[d['Metric Name'].strip()]=d['Metric Value']; name=d['Kernel Name']
        print(f, i, name[:70])
        print('   ', '; '.join('%s=%s'%(x,m.get(x,'?')) for x in keys))
